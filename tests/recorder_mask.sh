#!/bin/sh
# memsim record --fake on scaled_dot_product_attention with a mask, on the
# H200 (fake.py's sdpa): the kernel decides the allocations.  Shapes
# b=2, h=4, s=d=64 (tests/recorder/masked_attention.py): bf16 q/k/v and
# output 2*4*64*64*2 = 65536 bytes; fp32 ones and the math path's fp32
# weights 131072; cuDNN's fp32 stats 2*4*64*4 = 2048.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# sizes CSV LINE: the sizes allocated at masked_attention.py:LINE and by
# the cuDNN kernels, in order, on one line.
sizes() {
	awk -F, -v l="masked_attention.py:$2 " '$3 == "alloc" &&
		(index($8, l) == 1 || $8 ~ /^cudnn run_cudnn_SDP_fprop/) {
		printf "%s%s", s, $5; s = " " } END { print "" }' "$1"
}
for c in bool bias biasgrad; do
	$MEMSIM record -o "$tmp/$c.csv" -- "$PY" "$SRC/recorder/masked_attention.py" $c \
		2>"$tmp/err" || fail "record $c: $(tail -3 "$tmp/err")"
done
# 1. A boolean mask, no grad: cuDNN attention adds it, made additive
# (convert_boolean_attn_mask_cudnn, as convert_boolean_attn_mask_:
# at::where(mask, 0.0, scalar_tensor(neg_inf))): two bf16 scalars, the
# bf16 mask 16384, no logical_not; then cuDNN's two 8-byte RNG tensors, the
# output and its 256-byte workspace (_cudnn_attention_forward's order, as
# the H200's frames show; no softmax stats without a gradient: the H200's
# no_grad and inference_mode traces have none).  No fp32 weights.
got=$(sizes "$tmp/bool.csv" 18)
[ "$got" = "2 2 16384 8 8 65536 256" ] || fail "bool mask: $got"
# 2. An fp32 mask under bf16 autocast: cast like q/k/v (1*4*64*64*2 =
# 32768), the last argument first (autocast's wrapper casts the
# arguments of one call, which GCC evaluates right to left: mask, v, k,
# q), then cuDNN as above.
got=$(sizes "$tmp/bias.csv" 25)
[ "$got" = "32768 65536 65536 65536 8 8 65536 2048 256" ] || fail "bias: $got"
grep -q SafeSoftmaxBackward0 "$tmp/bias.csv" && fail "bias took the math path"
# 3. The same mask requiring grad (T5's position bias): the math path,
# fp32 weights (131072) and SafeSoftmaxBackward0, no cuDNN.
got=$(sizes "$tmp/biasgrad.csv" 25)
case "$got" in
"32768 65536 65536 65536 131072 "*) ;;
*) fail "biasgrad: $got" ;;
esac
grep -q SafeSoftmaxBackward0 "$tmp/biasgrad.csv" || fail "biasgrad: no math path"
grep -q cudnn "$tmp/biasgrad.csv" && fail "biasgrad ran cuDNN"

finish recorder_mask.sh
