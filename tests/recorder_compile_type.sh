#!/bin/sh
# memsim record --fake replaces torch.Tensor.type in Python (fake.py: a
# legacy CUDA type name, torch.cuda.FloatTensor, moves the tensor to the
# fake GPU); for a torch.dtype it handed the call to the original method
# descriptor, orig_type(self, dtype), which Dynamo cannot trace
# ("Dynamo does not know how to trace the builtin TensorBase.type"): a
# graph break, and under fullgraph=True an error.  transformers'
# DeepSeek-V2 MoE gate (F.linear(hidden_states.type(torch.float32), ...))
# in huggingface-llama-recipes' torch_compile.py (model.forward compiled
# with fullgraph=True, static cache) stopped so under the recorder and not
# on a GPU.  A dtype now goes where PyTorch's Tensor.type sends it
# (THPVariable_type: dispatch_to(self, dtype, non_blocking, copy=False),
# the same as Tensor.to), which Dynamo traces.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
TORCH_LOGS=graph_breaks $MEMSIM record --fake -o "$tmp/type.csv" -- "$PY" \
	"$SRC/recorder/compile_type.py" >"$tmp/out" 2>&1 ||
	fail "record: $(grep -m1 'Error\|does not know' "$tmp/out")"
grep -q 'Graph Break' "$tmp/out" &&
	fail "Dynamo broke the graph: $(grep -m1 -A3 'Graph Break' "$tmp/out")"
grep -q '^dtype torch.float16 rows 32$' "$tmp/out" ||
	fail "output: $(grep -v '^memsim record' "$tmp/out" | tail -3)"
# eager: the same conversions, the same object when the dtype is already
# right (Tensor.type(dtype) returns self then, as Tensor.to does)
cat >"$tmp/eager.py" <<'PY'
import torch
x = torch.randn(4, 4, device="cuda")
assert x.type(torch.float32) is x
y = x.type(torch.bfloat16)
assert y.dtype == torch.bfloat16 and y.device.type == "cuda"
assert x.type() == "torch.cuda.FloatTensor", x.type()
print("eager ok")
PY
$MEMSIM record --fake -o "$tmp/eager.csv" -- "$PY" "$tmp/eager.py" \
	>"$tmp/eout" 2>&1 || fail "eager: $(tail -3 "$tmp/eout")"
grep -q '^eager ok$' "$tmp/eout" || fail "eager output: $(tail -3 "$tmp/eout")"
finish recorder_compile_type
