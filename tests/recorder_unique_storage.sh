#!/bin/sh
# memsim record --fake: torch.unique on the GPU.  The CUDA kernel
# (unique_cuda_template, UniqueCub.cu) makes its output at::empty({numel})
# and, asked for counts, counts resize_(numel), then resizes both to the
# number of distinct values, which keeps the storage: the outputs hold
# numel elements whatever the values (a VQ codebook's usage,
# torch.unique(codes), holds all the codes' size).  The recording gave
# them the distinct count (--values cpu: the real one; --fake: the rule's
# guess, and an inverse of numel longs even where none was asked for:
# compute_unique returns at::empty({0})), so the two modes differed and
# both were low.  Also here: the kernel's locals (sorted, the arange and
# sorted_indices of the radix sort with the inverse, inv_loc_out, the
# long length, cub's storage), and UniqueCub<bool>: 2 values and 2
# counts, no sort.  Checked against the H100's run of the same script
# (tests/data/record/unique_storage.real.txt): its printed lines, and
# every allocation's size in order, cub's radix sort storage with the
# onesweep kernel's look-back tile (kernels._cub_radix_temp).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
real=$MSIM_TESTDATA/record/unique_storage.real.txt
cat >"$tmp/a.py" <<'PY'
import torch
codes = torch.randn(4096, 512, device="cuda").argmin(1)
u = torch.unique(codes)
print("storage", u.untyped_storage().nbytes())
print("alloc", torch.cuda.memory_allocated())
v, inv, cnt = torch.unique(codes, return_inverse=True, return_counts=True)
print("counts", cnt.untyped_storage().nbytes(), inv.numel())
del v, inv, cnt
b = torch.unique(codes > 100)
print("bool", b.untyped_storage().nbytes())
PY
for mode in "" "--values cpu"; do
	# shellcheck disable=SC2086
	(cd "$tmp" && $MEMSIM record --fake $mode -o "$tmp/a.csv" -- "$PY" a.py) \
		>"$tmp/err" 2>&1 || fail "record $mode: $(tail -3 "$tmp/err")"
	for want in storage alloc counts bool; do
		line=$(grep "^$want " "$real")
		grep -qxF "$line" "$tmp/err" || fail "$mode: '$line' not in: $(cat "$tmp/err")"
	done
	# (randn, argmin's codes) torch.unique(codes): sorted, cub's radix
	# sort storage, the output, the length, cub's select storage; then
	# with the inverse and counts, and of a bool tensor: as the GPU
	got="allocs $(awk -F, '$3 == "alloc" { printf "%s%s", sep, $5; sep = " " }' "$tmp/a.csv")"
	want=$(grep "^allocs " "$real")
	[ "$got" = "$want" ] || fail "$mode: $got; the GPU's $want"
done
finish recorder_unique_storage.sh
