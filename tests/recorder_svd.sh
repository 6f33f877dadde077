#!/bin/sh
# memsim record --fake: torch.linalg.svd on CUDA (dispatch.py's
# Dispatch._svd and _ev_svd).  GaLore's optimizers (galore_torch's
# GaLoreProjector) take the SVD of each projected gradient every
# update_proj_gap steps; the recording had the outputs alone.  The
# requests are TORCH_META_FUNC(_linalg_svd)'s, U, Vh, then S, then
# _linalg_svd_out's info (int32, one a matrix) and svd_cusolver's
# (cuda/linalg/BatchLinearAlgebraLib.cpp): A's column-major clone; for
# gesvdjBatched (m, n <= 32) the square U_ or V_ its kernel needs
# without full_matrices; stand-ins for U (m x k) and V (n x k) without
# compute_uv; for driver="gesvd" the clone of A^H (m < n), rwork
# (min(m, n)) and Vh_workspace; then _linalg_check_errors's
# infos.any(), one bool (two for a single matrix, as the H100 makes
# them).  cuSOLVER's workspaces (gesvdj, gesvd): one
# assumption linalg:workspace a call (none for gesvdjBatched).  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
A = torch.randn(256, 688, device="cuda")
U, S, Vh = torch.linalg.svd(A, full_matrices=False)
print("a", tuple(U.shape), U.stride(), tuple(S.shape), tuple(Vh.shape), Vh.stride())
del U, S, Vh
B = torch.randn(3, 20, 10, device="cuda")
U, S, Vh = torch.linalg.svd(B, full_matrices=False)
print("b", tuple(U.shape), U.stride(), tuple(Vh.shape), Vh.stride())
del U, S, Vh
U, S, Vh = torch.linalg.svd(B)
print("b2", tuple(U.shape), tuple(Vh.shape))
del U, S, Vh
C = torch.randn(64, 40, device="cuda")
U, S, Vh = torch.ops.aten._linalg_svd(C, False, False)
print("c", tuple(U.shape), tuple(S.shape), tuple(Vh.shape))
del U, S, Vh
D = torch.randn(30, 50, device="cuda")
U, S, Vh = torch.linalg.svd(D, full_matrices=False, driver="gesvd")
print("d", tuple(U.shape), tuple(Vh.shape))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "^a (256, 256) (1, 256) (256,) (256, 688) (688, 1)$" "$tmp/out" ||
	fail "a: $(cat "$tmp/out")"
grep -q "^b (3, 20, 10) (200, 1, 20) (3, 10, 10) (100, 10, 1)$" "$tmp/out" ||
	fail "b: $(cat "$tmp/out")"
grep -q "^c (0,) (40,) (0,)$" "$tmp/out" || fail "c: $(cat "$tmp/out")"
got=$(awk -F, '$3 == "alloc" { printf "%s%s", s, $5; s = " " } END { print "" }' "$tmp/a.csv")
# A; U, Vh, S; info, A's clone, two bools (one matrix: the H100's
# traces).  B; U, Vh, S; infos 3, the clone,
# U_ 3 x 20 x 20, any; full_matrices: U 3 x 20 x 20, Vh, S, infos, the
# clone, any.  C without compute_uv: S, info, the clone, U's and V's
# stand-ins 64 x 40 and 40 x 40, two bools.  D by gesvd: U, Vh, S,
# info, the clone of D^H, rwork 30, Vh_workspace 30 x 30, two bools.
want="704512 262144 704512 1024 4 704512 1 1"
want="$want 2400 2400 1200 120 12 2400 4800 1 4800 1200 120 12 2400 1"
want="$want 10240 160 4 10240 10240 6400 1 1"
want="$want 6000 3600 6000 120 4 6000 120 3600 1 1"
[ "$got" = "$want" ] || fail "allocations: $got"
# each call's temporaries freed before it returns: A's clone after the
# workspace's scope, info last
frees=$(awk -F, '$3 == "free_completed" { printf "%s%s", s, $5; s = " " } END { print "" }' "$tmp/a.csv" | cut -d' ' -f1-4)
[ "$frees" = "704512 1 1 4" ] || fail "frees: $frees"
grep -c ',assumption,linalg:workspace a.py:[0-9]* =not recorded$' "$tmp/a.csv" | grep -q '^3$' ||
	fail "assumptions: $(grep ',assumption,' "$tmp/a.csv")"
finish recorder_svd.sh
