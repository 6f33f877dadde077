#!/bin/sh
# memsim record --fake: an embedding of few rows looked up many times
# (lucidrains' routing-transformer on enwik8: 256 bytes of width 512 in
# 4 x 4096 tokens).  embedding_backward_cuda_kernel then takes its fused
# path (sum_and_scatter's grid of min(4096*4, 256) segments, 256 blocks,
# is under the H200's 132 SMs x 4, and 16384/10 + 256 = 1894 partial
# segments are over four times it): partial_to_segment_idx, 1894 int64
# (15152 bytes), where the two-pass path's grad_weight_per_segment,
# 1894 x 512 floats (3878912 bytes), was recorded and the H200's
# snapshot has none.  For a bfloat16 weight the atomics add into a float
# grad_weight_acc (256 x 512 x 4), copied into grad_weight.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import sys
import torch
emb = torch.nn.Embedding(256, 512).cuda()
if sys.argv[1] == "bf16":
    emb = emb.bfloat16()
x = torch.randint(0, 256, (4, 4096), device="cuda")
emb(x).sum().backward()
PY
segs() { awk -F, '$3 == "alloc" && $8 == "embedding_backward_cuda_kernel temporaries" {
	printf "%s%s", s, $5; s = " " } END { print "" }' "$1"; }
for c in fp32 bf16; do
	(cd "$tmp" && $MEMSIM record --fake -o "$tmp/$c.csv" -- "$PY" a.py $c) \
		>"$tmp/err" 2>&1 || fail "record $c: $(tail -3 "$tmp/err")"
done
# sorted_indices, orig_indices, the sort's arange (131072 each); after
# grad_weight: segment_offsets, the segment count, unique_by_key's
# output, the two partial-count arrays (256 x 8), the partial count,
# partial_segment_offset and partial_to_segment_idx (1894 x 8)
got=$(segs "$tmp/fp32.csv")
want="131072 131072 131072 131072 8 131072 2048 2048 8 15152 15152"
[ "$got" = "$want" ] || fail "fp32: $got"
got=$(segs "$tmp/bf16.csv")
[ "$got" = "$want 524288" ] || fail "bf16: $got"
finish recorder_embedding_fused.sh
