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
# counts, no sort.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
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
	# codes 32768 (4096 longs) + u 32768
	for want in "storage 32768" "alloc 65536" "counts 32768 4096" "bool 2"; do
		grep -qxF "$want" "$tmp/err" || fail "$mode: '$want' not in: $(cat "$tmp/err")"
	done
	# (randn, argmin's codes) torch.unique(codes): sorted (32768), cub's radix sort storage,
	# then the output (32768) and the length (8); the same in both modes
	awk -F, '$3 == "alloc" { print $5, $7 }' "$tmp/a.csv" >"$tmp/allocs"
	sed -n 3,6p "$tmp/allocs" | tr '\n' ' ' >"$tmp/first"
	grep -qF "32768 temporary 49663 temporary 32768 other 8 temporary" "$tmp/first" ||
		fail "$mode: unique's events: $(cat "$tmp/first")"
	mv "$tmp/allocs" "$tmp/allocs.${mode:+cpu}"
done
cmp -s "$tmp/allocs." "$tmp/allocs.cpu" ||
	fail "--fake and --values cpu differ: $(diff "$tmp/allocs." "$tmp/allocs.cpu")"
finish recorder_unique_storage.sh
