#!/bin/sh
# memsim record --fake: softmax_backward_cuda_out makes tmp = grad *
# output, which TensorIterator lays out as its first operand, the
# gradient; host_softmax_backward then runs on grad_.contiguous(): where
# the gradient is permuted (softmax(x).transpose(-1, -2) @ v: its
# gradient a transpose of a bmm's), tmp is too and is copied, the copy
# made after tmp and freed before it.  The H200's snapshot of lucidrains'
# memory-transformer-xl had that copy at each softmax backward of its
# memory attention, which the recording lacked.  A contiguous gradient:
# no copy.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(4, 8, 256, 300, device="cuda", requires_grad=True)
v = torch.randn(4, 8, 256, 64, device="cuda")
(x.softmax(-1).transpose(-1, -2) @ v).sum().backward()
y = torch.randn(4, 8, 256, 300, device="cuda", requires_grad=True)
w = torch.randn(4, 8, 300, 64, device="cuda")
(y.softmax(-1) @ w).sum().backward()
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$8 ~ /^softmax_backward/ && $3 == "alloc" {
	printf "%s+%s", s, $5; s = " "; live[$4] = $5 }
	$3 == "free_completed" && ($4 in live) { printf " -%s", live[$4];
	delete live[$4] } END { print "" }' "$tmp/a.csv")
# 4 x 8 x 256 x 300 floats: tmp, its copy freed first, then tmp; the
# second softmax's gradient contiguous: tmp alone
want="+9830400 +9830400 -9830400 -9830400 +9830400 -9830400"
[ "$got" = "$want" ] || fail "softmax backward temporaries: $got"
finish recorder_softmax_backward_copy.sh
