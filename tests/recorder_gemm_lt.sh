#!/bin/sh
# memsim record --fake: an addmm with a 1-D bias runs cuBLASLt (its
# workspace, 1 MiB, allocated once) only where PyTorch's
# isInputCompliesAddmmCudaLt lets it: mat2 at least 2 x 2.  Linear(20, 1)
# (mat2 20 x 1) takes cuBLAS's GEMM; a batch of one row (mat1 1 x 20)
# still runs cuBLASLt under PyTorch 2.11, as on the H200 (the corpus's
# pytorch/examples single_gpu.py and word_language_model generate.py).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
for c in wide narrow row; do
	$MEMSIM record -o "$tmp/$c.csv" -- "$PY" "$SRC/recorder/gemm_lt.py" $c \
		2>"$tmp/err" || fail "record $c: $(tail -3 "$tmp/err")"
	n=$(grep -c ',cuBLASLt workspace$' "$tmp/$c.csv")
	case $c in narrow) want=0 ;; *) want=1 ;; esac
	[ "$n" = "$want" ] || fail "$c: $n cuBLASLt workspaces, not $want"
	grep -q ',33554432,0,other,cuBLAS workspace$' "$tmp/$c.csv" ||
		fail "$c: no cuBLAS workspace"
done
finish recorder_gemm_lt.sh
