#!/bin/sh
# memsim record --fake: a 1-d convolution on CUDA.  _convolution and
# convolution_backward make a 3-d input contiguous ("avoid accidentally
# going through NHWC for permuted 3d input"): a permuted input (lucidrains'
# compressive-transformer and memory-transformer-xl compress memories
# with Conv1d(mem.transpose(1, 2))) is copied before the output and freed
# when the call returns, in the forward and again in the backward; then
# cuDNN runs it as a 2-d convolution of height 1 (view1d_as_2d,
# view4d), whose workspaces follow the 2-d rule (docs/recording.md):
# x + w + y + 16 bytes for a kernel wider than 1.  The H200's snapshot of
# compressive-transformer had both copies and the forward's 9437200-byte
# workspace that the recording lacked.  A contiguous input: no copy.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
conv = torch.nn.Conv1d(512, 512, 4, stride=4).cuda()
mem = torch.randn(4, 512, 512, device="cuda", requires_grad=True)
conv(mem.transpose(1, 2)).sum().backward()
x = torch.randn(4, 512, 512, device="cuda")
with torch.no_grad():
    conv(x)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $5 >= 1048576 && $7 != "parameter" {
	printf "%s%s", s, $5 ($8 ~ /contiguous copy/ ? "c" : ""); s = " " }
	END { print "" }' "$tmp/a.csv")
# mem (4 MiB); forward: the copy, y (1 MiB), the workspace (x 4 MiB + w
# 4 MiB + y 1 MiB + 16); backward: the copy, grad_input and its
# workspace, grad_weight and its workspace; mem's gradient (a copy of
# grad_input in mem's layout, AccumulateGrad); x contiguous: y and the
# workspace alone.
want="4194304 4194304c 1048576 9437200 4194304c 4194304 9437200 4194304"
want="$want 9437200 4194304 4194304 1048576 9437200"
[ "$got" = "$want" ] || fail "allocations: $got"
finish recorder_conv1d.sh
