#!/bin/sh
# memsim record --fake: a 1-d convolution runs on the GPU as a 2-d one of
# height 1 (PyTorch's _convolution and convolution_backward:
# view1d_as_2d puts stride 1, padding 0 and dilation 1 before the
# parameters, view4d unsqueezes dimension 2 of the input, weight and
# output) in cuDNN's NCHW plans, whose workspaces kernels.conv's 2-d rule
# gives.  The recording had none for a 3-d input: locuslab/TCN's dilated
# Conv1d (copymem_test.py's evaluation, 1000 x 10 x 1020 floats) has a
# 117 MB workspace at the H200's peak, x + w + y + 16 bytes to the byte.
# A 1x1 unit-stride convolution's forward takes none, nor one of fewer
# than 8 input channels (the 2-d rule's).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
m = torch.nn.Conv1d(16, 16, 7, padding=6, dilation=2).cuda()
p = torch.nn.Conv1d(16, 16, 1).cuda()
q = torch.nn.Conv1d(4, 16, 3).cuda()
x = torch.randn(8, 16, 100, device="cuda")
x4 = torch.randn(8, 4, 100, device="cuda")
with torch.no_grad():
    y = m(x)
    z = p(x)
    u = q(x4)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" { printf "%s%s%s", s, $5, ($8 ~ /workspace/ ? "w" : ""); s = " " }
	END { print "" }' "$tmp/a.csv")
# m's weight (16*16*7*4) and bias, p's and q's, x (8*16*100*4), x4
# (8*4*100*4); y (8*16*100*4: the padding 6 on each side and the
# dilated kernel's 12 cancel) and its workspace x + w + y + 16 = 51200 +
# 7168 + 51200 + 16; z alone; q's output (8*16*98*4) alone.
want="7168 64 1024 64 768 64 51200 12800 51200 109584w 51200 50176"
[ "$got" = "$want" ] || fail "allocations: $got"
finish recorder_conv1d_workspace.sh
