#!/bin/sh
# memsim record --fake, autograd's formulas whose branch for tensor
# subclasses (every fake tensor) differs from the one plain CUDA tensors
# take, against an H200's allocator: each case of
# validate/device/grad_branch_probe.py (x (16, 96) floats, one op, the
# backward of a sum) is recorded and its requests (+SIZE an alloc, -SIZE
# a free, in order) must be the H200's (torch 2.11; an H100's made the
# same, and masked_select's is the H100's), kept in
# tests/data/record/grad_branch/requests.txt.  Among them prod_backward
# (the input's zeros counted, then grad * (result / input)),
# cumprod_backward (any().item(), the reversed cumsum and a division),
# masked_fill_backward of a tensor value (masked_select(...).sum(), with
# the mask's nonzero()), median() of a whole tensor (its sort) and the
# int64 copy of a bool mask summed, and masked_select's backward
# (masked_scatter_'s prefix sum and CUB scan storage) (docs/recording.md,
# autograd's branches for tensor subclasses).  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
SRC=$(cd "$(dirname "$0")/.." && pwd)
probe=$SRC/validate/device/grad_branch_probe.py
grep -v '^#' "${MSIM_TESTDATA:-tests/data}/record/grad_branch/requests.txt" |
while read -r case want; do
	$MEMSIM record -o "$tmp/$case.csv" -- "$PY" "$probe" "$case" \
		2>"$tmp/err" || { fail "record $case: $(tail -3 "$tmp/err")"; continue; }
	# each free is the size of the block at its address
	got=$(awk -F, 'NR > 1 && $3 == "alloc" { s = "+" $5; live[$4] = $5 }
		NR > 1 && ($3 == "free_completed" || $3 == "free") {
			s = "-" live[$4]; delete live[$4] }
		NR > 1 && $3 ~ /^(alloc|free|free_completed)$/ {
			if ($6 != "0" && $6 != "") s = s "@s" $6
			printf "%s%s", sep, s; sep = " " }' "$tmp/$case.csv")
	[ "$got" = "$want" ] || fail "$case: $got
	want $want"
	echo "$fails" >"$tmp/fails"
done
fails=$(cat "$tmp/fails" 2>/dev/null || echo 1)
finish recorder_grad_branch.sh
