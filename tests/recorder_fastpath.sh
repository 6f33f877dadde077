#!/bin/sh
# memsim record --fake on PyTorch's inference fast paths
# (traces/memsim_record/attention.py): nn.MultiheadAttention's
# _native_multi_head_attention and nn.TransformerEncoder's nested tensor
# from a padding mask, every request in the order the H200 makes it
# (tests/recorder/fastpath.py: B=2, T=8, E=32, 4 heads).  Needs Python 3
# and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# ev CSV: the requests after the parameters, +SIZE an alloc, -SIZE a free
# (of the block's size), on one line.
ev() {
	awk -F, '$7 != "parameter" && ($3 == "alloc" || $3 == "free_completed") {
		if ($3 == "alloc") { sz[$4] = $5; printf "%s+%s", s, $5 }
		else printf "%s-%s", s, sz[$4]
		s = " " } END { print "" }' "$1"
}
for c in mha_w mha_kpm tenc tenc_f16; do
	$MEMSIM record -o "$tmp/$c.csv" -- "$PY" "$SRC/recorder/fastpath.py" $c \
		2>"$tmp/err" || fail "record $c: $(tail -3 "$tmp/err")"
done
# 1. need_weights: x (2048), the projection (6144), cuBLAS's workspace,
# _transform_bias_rescale_qkv's heads (6144, the projection freed), the
# scores (2048), the heads' copy and the out-projection (2048 each),
# cuBLASLt's workspace, the copy freed; then qkt.sum(1) (512) replaces
# the scores, and the heads go last, as native_multi_head_attention_cuda
# returns (before: the heads before the sum).
got=$(ev "$tmp/mha_w.csv")
want="+2048 +6144 +33554432 +6144 -6144 +2048 +2048 +2048 +1048576 -2048 +512 -2048 -6144"
[ "$got" = "$want" ] || fail "mha_w: $got"
# 2. A key padding mask (16 bytes; _canonical_mask's float copy, 64):
# the mask made boolean again (16) for _masked_softmax, whose output
# (2048) replaces the scores; the boolean copy, a by-value argument of
# masked_softmax, goes after the scores (before: before them).
got=$(ev "$tmp/mha_kpm.csv")
want="+2048 +16 +64 +6144 +33554432 +6144 -6144 +2048 +16 +2048 -2048 -16 -2048 +2048 +2048 +1048576 -2048 -6144 -64"
[ "$got" = "$want" ] || fail "mha_kpm: $got"
# 3. The encoder's mask check (_nested_tensor_from_mask_left_aligned):
# tmp_pad (2), cat (18), its int32 copy (72), argmin (16), then the copy
# and the cat freed, the last made first; cumsum (128, with its int64
# copy); equal's eq (2) and all (1), freed all first; the locals nums,
# tmp_pad, sizes.  Then _nested_tensor_from_mask the same way, its
# buffer (1536 = 12 tokens x 32 floats) and metadata, the layers on the
# buffer, to_padded_tensor's 2048.
got=$(ev "$tmp/tenc.csv")
want="+2048 +16 +64 +16 +2 +18 +72 +16 -72 -18 +128 +128 -128 +2 +1 -1 -2 -16 -2 -128 -16 +16 +2 +18 +72 +16 -72 -18 +128 +128 -128 +16 +32 -32 -128 +1536 +40 +80 -80 -40 -16 -16 -2 -16 +4608 +33554432 +1048576 +12 +12 +1536 -12 -12 +1536 -1536 -4608 +1536 +48 +48 -48 -48 -1536 +3072 +1536 -3072 +1536 +48 +48 -48 -48 -1536 -1536 -1536 +4608 +12 +12 +1536 -12 -12 +1536 -1536 -4608 +1536 +48 +48 -48 -48 -1536 +3072 +1536 -3072 +1536 +48 +48 -48 -48 -1536 -1536 -1536 +2048 +28 -28 -1536 -64"
[ "$got" = "$want" ] || fail "tenc: $got"
# 4. fp16: flash attention over the lengths (mha_varlen_fwd): after the
# output (768) and the log-sum-exp (4 heads x 12 tokens x 4 = 192) the
# RNG state (16) and an unused scalar (8) on the GPU, freed after the
# lengths (12 each) as the nested kernel's tuple goes (before: none).
got=$(ev "$tmp/tenc_f16.csv")
want="+1024 +16 +32 +16 +2 +18 +72 +16 -72 -18 +128 +128 -128 +2 +1 -1 -2 -16 -2 -128 -16 +16 +2 +18 +72 +16 -72 -18 +128 +128 -128 +16 +32 -32 -128 +768 +40 +80 -80 -40 -16 -16 -2 -16 +2304 +33554432 +1048576 +12 +12 +768 +192 +16 +8 -192 -12 -12 -16 -8 +768 -768 -2304 +768 +48 +48 -48 -48 -768 +1536 +768 -1536 +768 +48 +48 -48 -48 -768 -768 -768 +2304 +12 +12 +768 +192 +16 +8 -192 -12 -12 -16 -8 +768 -768 -2304 +768 +48 +48 -48 -48 -768 +1536 +768 -1536 +768 +48 +48 -48 -48 -768 -768 -768 +1024 +28 -28 -768 -32"
[ "$got" = "$want" ] || fail "tenc_f16: $got"
finish recorder_fastpath
