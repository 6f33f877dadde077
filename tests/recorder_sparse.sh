#!/bin/sh
# memsim record --fake: sparse COO tensors on the GPU (a 2-layer GCN whose
# adjacency is multiplied by torch.sparse.mm; forward, backward, Adam).
# The adjacency of 8 nodes has 28 entries, 22 distinct
# (traces/memsim_record/sparse.py):
# - built and coalesced on the host, moved to the GPU: its indices
#   (2 x 22 int64, 352 bytes), then its values (22 float32, 88 bytes);
# - coalesced on the GPU, indices known: 22, no assumption;
#   _coalesce_sparse_cuda's flattened indices, origIndices and
#   uniqueOffsets (28 int64, 224 bytes each) and the sort's buffer
#   (16 bytes an entry, 448), then the values (88) and indices (352);
# - indices of unknown values: nnz kept (28), one assumption coalesce.
# Before, the recording stopped at aten::_coalesce (no fake kernel) or at
# the sparse tensor's .to("cuda").  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
R="$SRC/recorder"
rec() {
	$MEMSIM record -o "$tmp/$1.csv" -- "$PY" "$R/sparse_gcn.py" $1 \
		>"$tmp/$1.out" 2>&1 || fail "record $1: $(tail -3 "$tmp/$1.out")"
}
rec cpu
grep -q "^nnz 22 indices (2, 22) torch.int64 values (22,)$" "$tmp/cpu.out" ||
	fail "cpu: $(cat "$tmp/cpu.out")"
awk -F, '$3 == "alloc" { print $5 }' "$tmp/cpu.csv" | head -2 | tr '\n' ' ' >"$tmp/o"
[ "$(cat "$tmp/o")" = "352 88 " ] || fail "cpu: first allocations $(cat "$tmp/o")"
grep -q ',annotate,' "$tmp/cpu.csv" && fail "cpu: an assumption"

rec cuda
grep -q "^nnz 22 indices (2, 22) torch.int64 values (22,)$" "$tmp/cuda.out" ||
	fail "cuda: $(cat "$tmp/cuda.out")"
grep -q ',annotate,' "$tmp/cuda.csv" && fail "cuda: an assumption"
# the first coalesce: after the indices (448) and values (112) made
awk -F, '$3 == "alloc" { print $5 ($7 == "temporary" ? "t" : "") }' \
	"$tmp/cuda.csv" | sed -n 3,8p | tr '\n' ' ' >"$tmp/o"
[ "$(cat "$tmp/o")" = "224t 224t 224t 448t 88 352 " ] ||
	fail "cuda: coalesce allocations $(cat "$tmp/o")"

rec random
grep -q "^nnz 28 indices (2, 28) torch.int64 values (28,)$" "$tmp/random.out" ||
	fail "random: $(cat "$tmp/random.out")"
grep ',annotate,' "$tmp/random.csv" | head -1 | cut -d, -f7- >"$tmp/o"
echo "assumption,coalesce sparse_gcn.py:20 =28" >"$tmp/want"
cmp -s "$tmp/o" "$tmp/want" || fail "random: $(diff "$tmp/want" "$tmp/o")"
$MEMSIM run --json "$tmp/cuda.csv" >/dev/null || fail "run"
# A sparse embedding's gradient, then SGD (facebookresearch/dlrm): the
# gradient has an entry an index (4096 rows of 64 floats, its values
# allocated in backward and held by .grad), the step adds it in place
# (add_out_dense_sparse_cuda: index_add_, no allocation), zero_grad()
# frees its values and the Linear's two gradients (blocks of 512).
$MEMSIM record --fake -o "$tmp/se.csv" -- "$PY" "$SRC/recorder/sparse_embedding.py" \
	>/dev/null 2>"$tmp/err" || fail "sparse embedding: $(tail -3 "$tmp/err")"
[ "$(grep -c '^grad torch.sparse_coo 4096 (4096, 64) False$' "$tmp/err")" = 2 ] ||
	fail "sparse embedding gradient: $(grep '^grad' "$tmp/err")"
awk '$1 == "backward" { b = $2 } $1 == "step" { s = $2 }
	$1 == "zero_grad" { z = $2; print s - b, s - z }' "$tmp/err" >"$tmp/d"
[ "$(cat "$tmp/d" | tr '\n' ' ')" = "0 1049600 0 1049600 " ] ||
	fail "sparse embedding step, zero_grad: $(cat "$tmp/d")"

# A sparse tensor of values that require grad, detached: the same indices
# and values, nothing allocated.  Before, the fake kernel's detach made
# its result on the CUDA backend and the recording stopped ("aten::detach
# has no fake (meta) kernel").
$MEMSIM record --fake -o "$tmp/sd.csv" -- "$PY" "$SRC/recorder/sparse_detach.py" \
	>"$tmp/out" 2>&1 || fail "sparse detach: $(tail -3 "$tmp/out")"
grep -q "^detach torch.sparse_coo 2 False 0$" "$tmp/out" ||
	fail "sparse detach: $(grep '^detach' "$tmp/out")"

# A dense adjacency made sparse on the GPU (to_sparse: dense_to_sparse's
# nonzero of 16 x 16, 32 entries, 2 x 32 int64; its indices cloned; the
# tensor indexed at them, 1 x 32 floats, squeezed and cloned), then
# torch.sparse.mm: the values the host computes, and line 12's
# allocations in order (the copy to the GPU first).  Before, the
# recording stopped ("aten::_to_sparse has no fake (meta) kernel").
cp "$SRC/recorder/sparse_to_sparse.py" "$tmp/" || fail "copy"
same_as_cpu sparse_to_sparse.py
awk -F, '$3 == "alloc" && $8 ~ /sparse_to_sparse.py:12 / { print $5 }' \
	"$tmp/sparse_to_sparse.csv" | tr '\n' ' ' >"$tmp/o"
[ "$(cat "$tmp/o")" = "1024 512 512 128 128 " ] ||
	fail "to_sparse allocations: $(cat "$tmp/o")"

finish recorder_sparse.sh
