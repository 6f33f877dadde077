#!/bin/sh
# memsim record --fake: torch.linalg.lstsq on CUDA (dispatch.py's
# Dispatch._lstsq).  The op carries the dynamic_output_shape tag (the
# CPU drivers gelsd and gelss compute residuals only at full rank) and
# the fake mode refused it: Time-Series-Library's Koopa fits its Koopman
# operator with lstsq (DynamicOutputShapeException, no trace).  On CUDA
# the driver is gels and every size static; the requests are
# linalg_lstsq_out's and linalg_lstsq_out_info's (BatchLinearAlgebra.cpp):
# infos (int32, one a matrix), the column-major solution (*, max(m, n),
# nrhs), the input's column-major working copy, then lstsq_kernel's tau
# (*, min(m, n)) and, for m < n, A^H's column-major clone (for cuBLAS's
# batched gels, m >= n, m <= 256, a solution of at least max(2, m / 16)
# matrices, apply_gels_batched's clone of the working copy and its two
# arrays of device pointers instead), and for m > n the residuals
# (*, nrhs), summed from the solution's rows n: (a vector right-hand
# side keeps its 1); where A's and b's values are known, the solution's
# and residuals' too.  The looped path's libraries' requests
# (tests/recorder_lstsq_workspace.sh has them against the H100's) and
# _linalg_check_errors' bools: no assumption.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
z = torch.randn(4, 3, 64, device="cuda")
x, y = z[:, :-1], z[:, 1:]
K = torch.linalg.lstsq(x, y).solution
print("K", tuple(K.shape), K.stride())
A = torch.randn(300, 20, device="cuda")
b = torch.randn(300, 3, device="cuda")
r = torch.linalg.lstsq(A, b)
print("r", tuple(r.solution.shape), tuple(r.residuals.shape), tuple(r.rank.shape))
C = torch.randn(8, 32, 4, device="cuda")
d = torch.randn(8, 32, device="cuda")
s = torch.linalg.lstsq(C, d)
print("s", tuple(s.solution.shape), s.solution.stride(), tuple(s.residuals.shape))
E = torch.tensor([[1., 0], [0, 1], [1, 1]], device="cuda")
f = torch.tensor([[1.], [2], [4]], device="cuda")
t = torch.linalg.lstsq(E, f)
print("t", [round(v, 4) for v in t.solution.flatten().tolist()],
      round(t.residuals.item(), 4))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "^K (4, 64, 64) (4096, 1, 64)$" "$tmp/out" || fail "K: $(cat "$tmp/out")"
grep -q "^r (20, 3) (3,) (0,)$" "$tmp/out" || fail "r: $(cat "$tmp/out")"
grep -q "^s (8, 4) (32, 1) (8, 1)$" "$tmp/out" || fail "s: $(cat "$tmp/out")"
# known A and b (constants): the values, computed by the CPU's gels:
# x = (4/3, 7/3), the residual 1/3
grep -q "^t \[1.3333, 2.3333\] 0.3333$" "$tmp/out" || fail "t: $(cat "$tmp/out")"
got=$(awk -F, '$3 == "alloc" { printf "%s%s", s, $5; s = " " } END { print "" }' "$tmp/a.csv")
# z; infos 4 x 4, the solution 4*64*64 floats, x's copy, tau 4*2, x^H's
# clone, then cuBLAS's batched geqrf of the 4 x^H (64 rows, 4 matrices:
# geqrf_kernel's batched path) with its pointers to them and to tau's
# columns and the thread's cuBLAS workspace, the batched trsm's
# pointers to the 4 matrices of x^H and of the solution, ormqr's infos
# and its workspace for each solution (64 rows, 2 reflectors, 64
# right-hand sides), one bool.  A, b; infos, the solution 300*3, A's copy, tau 20,
# geqrf's infos and workspace, ormqr's, the batched trsm's pointers (20
# columns), the residuals 3, two bools (one matrix).  C, d; infos 8 x 4,
# the solution 8*32, C's copy, batched gels' clone of it and its
# pointers to C's and the solution's 8 matrices, the residuals 8*1, one
# bool.  E, f (the batched path's 3 x 2 too: a single matrix); infos,
# the solution, E's copy, tau, geqrf's and ormqr's (3 rows: the rule's,
# 128 bytes over what the H100 asks, kernels.ormqr_workspace_bytes),
# the trsm's pointers, the residual, two bools.
want="3072 16 65536 2048 32 2048 32 32 33554432 32 32"
want="$want 4 460672 460672 460672 460672 1"
want="$want 24000 3600 4 3600 24000 80 4 3145856 4 602240 8 8 12 1 1"
want="$want 4096 1024 32 1024 4096 4096 64 64 32 1"
want="$want 24 12 4 12 24 8 4 3145856 4 268544 8 8 4 1 1"
[ "$got" = "$want" ] || fail "allocations: $got"
grep -q ',assumption,' "$tmp/a.csv" &&
	fail "assumptions: $(grep ',assumption,' "$tmp/a.csv")"
finish recorder_lstsq.sh
