#!/bin/sh
# A model loaded from a local checkpoint with transformers'
# from_pretrained straight onto the GPU (device_map="cuda", and "auto"):
# transformers 5 copies the tensors from a thread pool, threads of a
# library that run without the fake mode ("Could not run
# 'aten::empty_strided' with arguments from the 'CUDA' backend"); the
# recorder has it load them in the calling thread.  The trace peaks, once
# loaded, every parameter and buffer of the model in bf16, each a block
# of the caching allocator (round_size: a multiple of 512 bytes), as the
# same load onto the CPU counts them.  The same under torch.inference_mode
# (FastChat's @torch.inference_mode() main), loaded on the host and moved
# with .to("cuda"): from_pretrained builds the model under
# torch.device("meta"), where torch.tensor([]) detaches its meta result in
# place, which the fake mode refused ("Can't call metadata mutating ops on
# non-Fake Tensor inputs"); the meta kernel runs.  Skips (77) without
# PyTorch or transformers.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import transformers' 2>/dev/null ||
	{ echo "no transformers: skipped"; exit 77; }
cd "$tmp" || exit 1
"$PY" - >"$tmp/want" 2>"$tmp/err" <<'PY' || fail "save: $(tail -3 "$tmp/err")"
import torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=1000)
torch.manual_seed(0)
LlamaForCausalLM(cfg).save_pretrained("tiny")
m = LlamaForCausalLM.from_pretrained("tiny", dtype=torch.bfloat16)
ts = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
      for t in list(m.parameters()) + list(m.buffers())}
print(sum((n + 511) // 512 * 512 for n in ts.values()))
PY
for map in cuda auto inference; do
	if [ $map = inference ]; then
		cat >"load.py" <<PY
import torch
from transformers import AutoModelForCausalLM
with torch.inference_mode():
    m = AutoModelForCausalLM.from_pretrained("tiny", dtype=torch.bfloat16)
    m = m.to("cuda")
assert next(m.parameters()).device.type == "cuda"
PY
	else
		cat >"load.py" <<PY
import torch
from transformers import AutoModelForCausalLM
m = AutoModelForCausalLM.from_pretrained("tiny", dtype=torch.bfloat16,
                                         device_map="$map")
assert next(m.parameters()).device.type == "cuda"
print("allocated", torch.cuda.memory_allocated())
PY
	fi
	$MEMSIM record --fake -o "$map.csv" -- "$PY" load.py >/dev/null \
		2>"$tmp/err" || fail "$map: $(tail -3 "$tmp/err")"
	$MEMSIM run --json "$map.csv" >"$map.json" || fail "$map: run"
	got=$(key allocated_bytes.all.peak "$map.json")
	[ -n "$got" ] && [ "$got" = "$(cat want)" ] ||
		fail "$map: a peak of $got bytes, the model's are $(cat want)"
done
finish recorder_hfload
