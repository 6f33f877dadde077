#!/bin/sh
# transformers asks whether a tensor is a FakeTensor to tell a trace
# from a run (import_utils.is_tracing); the recorder's tensors are fake
# only here.  Taken for a trace, an all-ones attention mask was not
# dropped for SDPA's is_causal (masking_utils._ignore_causal_mask_sdpa):
# each attention layer got a (2, 1, 256, 256) mask and the kernel of a
# masked call.  As in a real run, the step with an all-ones mask
# allocates what the step without one does, but for the mask itself
# (2 x 256 int64, made on the GPU) and fast_all's sum and comparison:
# the same requests, in order.
# Skips (77) without PyTorch or transformers.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import transformers' 2>/dev/null ||
	{ echo "no transformers: skipped"; exit 77; }
for m in ones none; do
	$MEMSIM record --fake -o "$tmp/$m.csv" -- "$PY" "$SRC/recorder/hf_mask.py" $m \
		>/dev/null 2>"$tmp/err" || fail "$m: $(tail -3 "$tmp/err")"
	# the requests' sizes and sites, but the mask's own copy and
	# fast_all's sum and comparison (at the model, before its layers;
	# the sum of the bool mask reads it as int64, 2 x 256 x 8 bytes,
	# make_reduction_from_out_ty)
	awk -F, '$3 == "alloc" && $8 !~ /hf_mask.py:14 / &&
		$8 != "LlamaForCausalLM.model" &&
		!($8 == "gpu_reduce_kernel global buffer" && $5 == 4096) { print $5, $8 }' \
		"$tmp/$m.csv" >"$tmp/$m.req"
done
[ -s "$tmp/none.req" ] || fail "no requests recorded"
cmp -s "$tmp/ones.req" "$tmp/none.req" ||
	fail "an all-ones mask changed the step: $(diff "$tmp/none.req" "$tmp/ones.req" | grep '^[<>]' | head -3 | tr '\n' ' ')"
finish recorder_hfmask.sh
