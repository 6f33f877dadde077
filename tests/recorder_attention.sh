#!/bin/sh
# memsim record --fake on attention that PyTorch composes from other ops
# (tests/recorder/attention_paths.py, H200): the math SDPA path's
# _safe_softmax (dispatch.py) and the fused inference paths of
# nn.TransformerEncoderLayer and nn.MultiheadAttention (attention.py).
# Without these rules the fake mode answered each with its output alone:
# no softmax temporaries, no projections, no cuBLAS workspace.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# sizes CSV SITE: the sizes allocated at SITE (a module and its
# submodules, parameters aside, or a prefix ending in a space) and the
# cuBLAS / cuBLASLt workspaces, in order, on one line.
sizes() {
	awk -F, -v l="$2" '$3 != "alloc" || $7 == "parameter" { next }
		$8 == l || $8 ~ /^cuBLAS/ || (index($8, l) == 1 &&
		(l ~ / $/ || substr($8, length(l) + 1, 1) == ".")) {
		printf "%s%s", s, $5; s = " " } END { print "" }' "$1"
}
for c in math encoder encmask enccausal enclong nested nestedown padunknown weights mhabf16; do
	$MEMSIM record -o "$tmp/$c.csv" -- "$PY" "$SRC/recorder/attention_paths.py" $c \
		2>"$tmp/err" || fail "record $c: $(tail -3 "$tmp/err")"
done
ws=33554432     # the H200's cuBLAS workspace
lt=1048576      # cuBLASLt's
# 1. Math SDPA, q = k = v bf16 [2, 4, 256, 64], causal: q, k, v made
# fp32 (f = 2*4*256*64*4 each), q scaled (f), the causal mask (ones and
# tril, 256*256 bools; two 0-dim scalars; the fp32 mask 256*256*4), k
# scaled (f), the scores (a = 2*4*256*256*4) and cuBLAS's workspace; then
# _safe_softmax: its output (a), isneginf's booleans (a / 4), the rows
# all -inf (2*4*256), a 0-dim zero; the weights back to bf16 (a / 2), the
# context (f) and the output in bf16 (f / 2).
f=$((2 * 4 * 256 * 64 * 4)); a=$((2 * 4 * 256 * 256 * 4)); m=$((256 * 256))
line=$(grep -n 'scaled_dot_product_attention(q, q, q' \
	"$SRC/recorder/attention_paths.py" | cut -d: -f1)
got=$(sizes "$tmp/math.csv" "attention_paths.py:$line ")
want="$f $f $f $f $m $m 4 4 $((m * 4)) $f $a $ws $a $((a / 4)) 2048 4 $((a / 2)) $f $((f / 2))"
[ "$got" = "$want" ] || fail "math: $got, not $want"
# Its peak: at where(), everything but the mask's bools, the scaled k
# and the q copy's scalars: bf16 q (f / 2), three fp32 copies and the
# scaled q, the fp32 mask, the scores, the workspace, softmax's output,
# the booleans, the rows and the zero (each rounded up to 512 bytes).
$MEMSIM run --json "$tmp/math.csv" >"$tmp/math.json" || fail "run math"
peak=$((f / 2 + 4 * f + m * 4 + a + ws + a + a / 4 + 2048 + 512))
[ "$(key allocated_bytes.all.peak "$tmp/math.json")" = "$peak" ] ||
	fail "math peak $(key allocated_bytes.all.peak "$tmp/math.json"), not $peak"
# 2. One encoder layer, d 64, 2 heads, FFN 128, x [4, 32, 64] fp32, no
# mask (b = 4*32*64*4 bytes an activation): native multi-head attention
# takes SDPA (memory-efficient attention for fp32): the packed projection
# (3b) with the workspaces of its GEMM (cuBLAS's, then cuBLASLt's for the
# bias), attention's output (b), the out-projection (b); add and
# layer_norm (b, mean and rstd 4*32*4 each); the FFN (2b with ReLU
# fused, then b); add and layer_norm again.
b=$((4 * 32 * 64 * 4)); r=$((4 * 32 * 4))
got=$(sizes "$tmp/encoder.csv" TransformerEncoder.layers.0)
want="$((3 * b)) $ws $lt $b $b $b $r $r $((2 * b)) $b $b $r $r"
[ "$got" = "$want" ] || fail "encoder: $got, not $want"
# The first layer_norm's output (the 6th of those requests) is
# pre_ffn_res, a local of transformer_encoder_layer_forward: freed when
# it returns, after the second layer_norm's output (the 11th); freed
# before it, a bf16 layer of the H200 probe replayed 2 MiB short.
order=$(awk -F, '$3 == "alloc" && $7 != "parameter" &&
	($8 ~ /^cuBLAS/ || index($8, "TransformerEncoder.layers.0") == 1) {
		n++; if (n == 6) pre = $4; if (n == 11) norm2 = NR }
	$3 == "free_completed" && $4 == pre && !freed { freed = NR }
	END { print (freed > norm2 ? "after" : "before") }' "$tmp/encoder.csv")
[ "$order" = after ] ||
	fail "encoder: the first norm's output freed $order the second norm's"
# 3. The same with a key padding mask (made float by
# TransformerEncoder, 4*32*4): no SDPA; the projection without bias
# (3b, cuBLAS), _transform_bias_rescale_qkv's [3, B, heads, T, d] (3b),
# the scores (s = 4*2*32*32*4), the mask made boolean (4*32),
# _masked_softmax's output (s), the heads' copy (b), the out-projection
# (b, cuBLASLt), then as above.
s=$((4 * 2 * 32 * 32 * 4))
got=$(sizes "$tmp/encmask.csv" TransformerEncoder)
want="$r $((3 * b)) $ws $((3 * b)) $s 128 $s $b $b $lt $b $r $r $((2 * b)) $b $b $r $r"
[ "$got" = "$want" ] || fail "encmask: $got, not $want"
# 3b. A causal [32, 32] float mask instead: MultiheadAttention's
# merge_masks expands it to [4, 2, 32, 32] (mask_type 2), made boolean
# whole (8192 bytes); then as in 3.
got=$(sizes "$tmp/enccausal.csv" TransformerEncoder.layers.0)
want="$((3 * b)) $ws $((3 * b)) $s 8192 $s $b $b $lt $b $r $r $((2 * b)) $b $b $r $r"
[ "$got" = "$want" ] || fail "enccausal: $got, not $want"
# 3c. One sequence of 1040 with a key padding mask: a row of 1040
# scores is too long for _masked_softmax's persistent kernel, so its
# output (l = 2*1040*1040*4) is replaced by softmax (l) of the scores
# filled with -inf (l), that copy freed after; the mask made boolean
# (1040) first, as in 3.
bl=$((1040 * 64 * 4)); l=$((2 * 1040 * 1040 * 4)); rl=$((1040 * 4))
got=$(sizes "$tmp/enclong.csv" TransformerEncoder.layers.0)
want="$((3 * bl)) $ws $((3 * bl)) $l 1040 $l $l $l $bl $bl $lt $bl $rl $rl $((2 * bl)) $bl $bl $rl $rl"
[ "$got" = "$want" ] || fail "enclong: $got, not $want"
# 4. The same layer under nn.TransformerEncoder with a left-aligned
# padding mask whose values are known (zeros, then slices set): the
# nested path on 16 + 3 * 24 = 88 tokens (t = 88*64*4 bytes a buffer):
# the batch packed (t) and its int32 metadata (2*4 + 3 + 5), then the
# layer on the buffer: the packed projection (3t) and the workspaces,
# the cumulative lengths of queries and keys (5 int32 each), attention's
# output (t), the out-projection (t), layer_norm (t, mean and rstd 88
# floats each), the FFN (2t, t), layer_norm; the output padded back
# ([4, 32, 64]: b) with its offsets and sizes (5 + 8 int32).
t=$((88 * 64 * 4)); r88=$((88 * 4))
got=$(sizes "$tmp/nested.csv" TransformerEncoder.layers.0)
want="$((3 * t)) $ws $lt 20 20 $t $t $t $r88 $r88 $((2 * t)) $t $t $r88 $r88"
[ "$got" = "$want" ] || fail "nested: $got, not $want"
got=$(awk -F, '$3 == "alloc" && $8 == "TransformerEncoder" && $5 >= 52 {
	printf "%s%s", s, $5; s = " " } END { print "" }' "$tmp/nested.csv")
case "$got" in
*" $t 64 $b 52") ;;
*) fail "nested: packing and padding: $got" ;;
esac
grep -q ',assumption,' "$tmp/nested.csv" && fail "nested: an assumption"
# 4b. The same with d 40 and 2 heads: a head of 20, not a multiple of 8,
# so native multi-head attention's own path on the nested input (88
# tokens, u = 88*40*4 bytes a buffer): the projection without bias (3u)
# and cuBLAS's workspace; the heads padded to the longest sequence
# rounded up to 8 ([3, 4, 2, 24, 20]: p) with 9 int32 offsets and sizes;
# the scores (c = 4*2*24*24*4); the padding as a [4, 24] boolean mask on
# the GPU; _masked_softmax's output (c); the heads packed back (u) with
# their metadata (17 int32, sent non-blocking from int64: 136); the
# out-projection (u) and cuBLASLt's workspace; then as in 4.
u=$((88 * 40 * 4)); p=$((3 * 4 * 2 * 24 * 20 * 4)); c=$((4 * 2 * 24 * 24 * 4))
got=$(sizes "$tmp/nestedown.csv" TransformerEncoder.layers.0)
want="$((3 * u)) $ws $p 36 $c 96 $c $u 68 $u $lt $u $r88 $r88 $((88 * 128 * 4)) $u $u $r88 $r88"
[ "$got" = "$want" ] || fail "nestedown: $got, not $want"
grep -q ',copy_kernel_cuda host values on the GPU$' "$tmp/nestedown.csv" ||
	fail "nestedown: no conversion on the GPU"
# 5. A padding mask of unknown values (randn > 0): whether it is
# left-aligned is assumed not (nested:padded), the padded path as in 3.
grep -q ',assumption,nested:padded ' "$tmp/padunknown.csv" ||
	fail "padunknown: no assumption"
got=$(sizes "$tmp/padunknown.csv" TransformerEncoder.layers.0)
want="$((3 * b)) $ws $((3 * b)) $s 128 $s $b $b $lt $b $r $r $((2 * b)) $b $b $r $r"
[ "$got" = "$want" ] || fail "padunknown: $got, not $want"
# 6. nn.MultiheadAttention asked for its weights: its own path, the
# softmax in place, the weights averaged over the heads (4*32*32*4).
got=$(sizes "$tmp/weights.csv" MultiheadAttention)
want="$((3 * b)) $ws $((3 * b)) $s $b $b $lt $((4 * 32 * 32 * 4))"
[ "$got" = "$want" ] || fail "weights: $got, not $want"
# 7. The same in bf16, no weights asked: select_sdp_backend picks cuDNN
# attention (sm90), one of the kernels native multi-head attention hands
# SDPA to: the packed projection (3h, h = 4*32*64*2) and the workspaces,
# cuDNN's RNG seed and offset (8 each), its output (h) and 256-byte
# workspace, the out-projection (h).
h=$((4 * 32 * 64 * 2))
got=$(sizes "$tmp/mhabf16.csv" MultiheadAttention)
want="$((3 * h)) $ws $lt 8 8 $h $h"
[ "$got" = "$want" ] || fail "mhabf16: $got, not $want"
grep -q ',cudnn run_cudnn_SDP_fprop workspace$' "$tmp/mhabf16.csv" ||
	fail "mhabf16: no cuDNN attention"
# 8. Their values under --values cpu: each fused op's CPU kernel on the
# inputs' values (values.py), not the composite's (whose
# _transform_bias_rescale_qkv and _masked_softmax are outputs only);
# _safe_softmax's from its composite, a row all -inf zero.
$MEMSIM record --values cpu -o "$tmp/values.csv" -- "$PY" \
	"$SRC/recorder/attention_paths.py" values >"$tmp/out" 2>"$tmp/err" ||
	fail "record values: $(tail -3 "$tmp/err")"
grep -q '^values ok$' "$tmp/out" "$tmp/err" ||
	fail "values: $(grep '^values' "$tmp/out" "$tmp/err")"

finish recorder_attention.sh
