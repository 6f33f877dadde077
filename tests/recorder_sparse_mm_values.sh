#!/bin/sh
# memsim record: the values of mm / addmm of a sparse COO matrix by a
# dense one on the GPU (sparse.addmm answers the op by its kernel's
# allocations) are computed on the host where the sparse matrix's indices
# and values and the dense operand's are known (sparse._product), under
# --values rules (shadows) and --values cpu.  pygcn's and powerful-gnns'
# `torch.spmm(adj, h)` left every later value unknown: under --values cpu
# each loss and accuracy they print was the .item() rule's.  And
# _indices() / _values() of such a tensor have the values of the tensors
# it was made of (sparse.part): pyGAT's backward gathers its edges'
# gradient at `a._indices()[0, :] * N + a._indices()[1, :]`.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
for v in rules cpu; do
	$MEMSIM record --fake --values $v -o "$tmp/a.csv" -- "$PY" \
		"$SRC/recorder/sparse_mm_values.py" >"$tmp/err" 2>&1 ||
		fail "record ($v): $(tail -3 "$tmp/err")"
	for want in "spmm True" "addmm True" "sum -4.7085 -4.7085" \
		"indices True" "values True"; do
		grep -qxF "$want" "$tmp/err" ||
			fail "($v) '$want' not in: $(cat "$tmp/err")"
	done
done
finish recorder_sparse_mm_values.sh
