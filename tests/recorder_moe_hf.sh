#!/bin/sh
# memsim record --fake on a Hugging Face mixture of experts
# (tests/recorder/moe_hf.py).  Transformers' default experts ("grouped_mm")
# call torch._grouped_mm with the input cast to the weights' dtype, since
# grouped_mm is not autocast-enabled: an fp32 model trained under bf16
# autocast calls it in float32, which CUDA runs through
# _grouped_mm_fallback (mm_out per expert) but whose meta kernel refuses
# ("Expected inputs of BF16 type", the recording stopped).  The output is
# create_grouped_gemm_output_tensor's: (64, 6) fp32 with its rows padded
# to 16 bytes, 63 * 8 + 6 floats (2040 bytes).  The experts' other
# kernels and their temporaries, as the H200 showed them
# (traces/memsim_record/kernels.py):
# - sort of 2048 int64 ids (small sort): values, indices, then
#   fillSliceWithIndex's arange of 2048 longs (16384), freed;
# - cumsum of 8 int32 counts: one non-unit dimension goes to cub's
#   inclusive scan, 1023 bytes of storage (33 tile descriptors of 16
#   bytes rounded to 256, plus 255);
# - torch.where over a permuted one-hot mask's row (2, 16) int64:
#   nonzero_out_cuda copies it contiguous (256), the count (4), cub's
#   reduce storage (1, freed), the output (8 rows x 2 dims x 8 = 128),
#   cub's select storage (1023, freed), then the count and the copy.
# SDPA under bf16 autocast casts its arguments last first (autocast's
# cached_cast calls, one call's arguments, run right to left on the CUDA
# build; the H200 trace of Qwen3-MoE's fp32 queries, keys and values):
# value, key (524288 each), then the query (1048576), before the
# attention's output.  Its cuDNN backward with grouped keys and values
# (8 query heads, 4 key/value heads) holds the rule's dQ workspace
# (4*8*256*64*4 + 4*8*256*4 + 256 = 2130176) plus the keys' and values'
# gradients at the query's 8 heads (2 * 4*8*256*64*2 = 2097152): 4227328,
# as the H200 asked (kernels.attention_backward).
# x[perm]'s backward (IndexBackward0): index_backward puts the gradient
# into new zeros in place (_index_put_impl_) on plain tensors, but calls
# the out-of-place index_put for tensor subclasses, the fake ones too (a
# copy of the zeros the GPU never makes); then index_put_with_sort_kernel's
# temporaries for 64 indices (512 bytes each): the wrapped index and the
# linear one (the wrapped freed), sorted, original and arange indices,
# cub's 1 byte, all freed.
# The model: a one-layer Mixtral (4 experts, top-2, 16 tokens) records
# under both implementations; grouped_mm sorts the 32 choices (arange 256)
# and scans the 4 counts (1023); eager's expert_hit nonzero over the 5
# classes (contiguous: 4, 1, 1023) and one torch.where a routed expert,
# each with its 8 rows (uniform routing: 32 choices / 4 experts).
# Skips (77) without PyTorch or transformers.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
R="$SRC/recorder"
$MEMSIM record -o "$tmp/ops.csv" -- "$PY" "$R/moe_hf.py" ops 2>"$tmp/err" ||
	fail "record ops: $(tail -3 "$tmp/err")"
# every row after the first alloc, as action:size:category
got=$(awk -F, 'NR > 1 && ($3 == "alloc" || $3 ~ /^free/) { printf "%s:%s:%s ", substr($3, 1, 1), $5, $7 }' "$tmp/ops.csv")
want="a:8192:input a:3072:input a:16:input a:2040:input f:2040: "
want="${want}a:16384:input a:16384:other a:16384:other a:16384:temporary f:16384: f:16384: f:16384: "
want="${want}a:32:input a:32:other a:1023:temporary f:1023: f:32: "
want="${want}a:256:input a:256:other f:256: a:40:input a:160:other a:1280:input f:160: f:40: "
want="${want}a:256:temporary a:4:temporary a:1:temporary f:1: a:128:other a:1023:temporary f:1023: f:4: f:256: "
case "$got" in
"$want"*) ;;
*) fail "ops: $got, want $want..." ;;
esac
grep -q "^rows 8$" "$tmp/err" || fail "ops rows: $(tail -3 "$tmp/err")"
$MEMSIM record -o "$tmp/index.csv" -- "$PY" "$R/moe_hf.py" index 2>"$tmp/err" ||
	fail "record index: $(tail -3 "$tmp/err")"
got=$(awk -F, '/IndexBackward0|index_put/ || ($3 ~ /^free/ && p) { p = 1; printf "%s:%s ", substr($3, 1, 1), $5 }' "$tmp/index.csv")
want="a:8192 a:512 a:512 f:512 a:512 a:512 a:512 a:1 f:1 f:512 f:512 f:512 f:512 "
case "$got" in
"$want"*) ;;
*) fail "index backward: $got, want $want..." ;;
esac
$MEMSIM record -o "$tmp/sdpa.csv" -- "$PY" "$R/moe_hf.py" sdpa 2>"$tmp/err" ||
	fail "record sdpa: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $7 == "input" { printf "%s ", $5 }' "$tmp/sdpa.csv")
[ "$got" = "2097152 1048576 1048576 524288 524288 1048576 " ] ||
	fail "sdpa casts: $got"
got=$(awk -F, '$8 ~ /SDP_bprop/ { printf "%s ", $5 }' "$tmp/sdpa.csv")
[ "$got" = "4227328 " ] || fail "sdpa backward workspace: $got"
if "$PY" -c 'import transformers' 2>/dev/null; then
	for impl in grouped_mm eager; do
		$MEMSIM record -o "$tmp/$impl.csv" -- "$PY" "$R/moe_hf.py" $impl \
			2>"$tmp/err" || fail "record $impl: $(tail -3 "$tmp/err")"
		grep -q "^experts $impl$" "$tmp/err" ||
			fail "$impl: $(grep -v '^memsim' "$tmp/err" | tail -3)"
	done
	k='$7 == "temporary" && ($8 ~ /^(sort|cumsum|nonzero)/) { printf "%s ", $5 }'
	got=$(awk -F, "$k" "$tmp/grouped_mm.csv")
	[ "$got" = "256 1023 " ] || fail "grouped_mm temporaries: $got"
	got=$(awk -F, "$k" "$tmp/eager.csv")
	want="4 1 1023 "
	for e in 1 2 3 4; do want="${want}256 4 1 1023 "; done
	[ "$got" = "$want" ] || fail "eager temporaries: $got, want $want"
	# the outputs of the five nonzero calls: (4, 1) hits, (8, 2) rows
	got=$(awk -F, '$3 == "alloc" && $7 == "temporary" && $8 ~ /^nonzero/ && $5 == 1 { n = NR + 2 } NR == n { printf "%s ", $5 }' "$tmp/eager.csv")
	[ "$got" = "32 128 128 128 128 " ] || fail "eager nonzero outputs: $got"
else
	echo "no transformers: the model part skipped"
fi
finish recorder_moe_hf.sh
