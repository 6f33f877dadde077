#!/bin/sh
# memsim record --fake: an add inside a backward formula is not the
# autograd engine's accumulation.  The engine adds a second gradient of
# one input into the first in place (InputBuffer::accumulate, when it
# holds the last reference); the recorder does that add in place for the
# fake tensors, which the engine adds out of place.  But a C++ formula's
# own add of two fresh temporaries looked the same from the dispatch:
# cholesky_backward's `0.5 * (gA + gA.tril(-1).mH())` was done in place,
# one 2,000,000-byte buffer short of the H200's snapshot for each
# GPyTorch SVGP step (a 20 MiB segment of reserved, -16%).  Now an add
# whose first operand the node being evaluated made itself is the
# formula's, unless two of the node's gradients go to one input (x * x:
# MulBackward0's two gradients of x, added in place by the engine).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
n = 500
X = torch.randn(n, n, device="cuda", dtype=torch.float64)
A = (X @ X.mT + n * torch.eye(n, device="cuda", dtype=torch.float64))
A.requires_grad_()
L, info = torch.linalg.cholesky_ex(A)
g = torch.randn(n, n, device="cuda", dtype=torch.float64)
(L * g).sum().backward()
x = torch.randn(1000, 1000, device="cuda", requires_grad=True)
(x * x).sum().backward()
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# cholesky_backward: mm, tril, tril, add, mul, two solve_triangular
n=$(grep -c ',alloc,.*,backward LinalgCholeskyExBackward0$' "$tmp/a.csv")
[ "$n" = 7 ] || fail "cholesky_ex's backward made $n blocks, not 7"
# the engine's add of x * x's two gradients, in place: 2 blocks
n=$(grep -c ',alloc,[0-9]*,4000000,.*,backward MulBackward0$' "$tmp/a.csv")
[ "$n" = 2 ] || fail "x * x's backward made $n blocks of x's size, not 2"
finish recorder_formula_add.sh
