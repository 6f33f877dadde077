#!/bin/sh
# The recorder's torch.tensor (fake.py: a list holding fake tensors is
# brought to the host first) is what Dynamo finds where a compiled frame
# calls torch.tensor, and it traced into it: PyTorch's own constructor
# there is a builtin Dynamo does not know by that object, and a list of
# 0-dim tensors in a resumed frame met the real constructor
# (NotImplementedError: aten::_local_scalar_dense on CUDA): Qwen2-VL
# under the Trainer's --torch_compile stopped.  Under Dynamo the wrapper
# now gives Dynamo's own rule for torch.tensor (torch._refs.tensor, as
# handle_torch_tensor does).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/t.csv" -- "$PY" \
	"$SRC/recorder/compile_tensor_list.py" >"$tmp/out" 2>&1 ||
	fail "record: $(grep -m1 'Error' "$tmp/out")"
grep -q '^torch.Size(\[2, 8\])$' "$tmp/out" ||
	fail "output: $(grep -v '^memsim record' "$tmp/out" | tail -3)"
grep -q 'compile:eager' "$tmp/t.csv" && fail "a graph ran eagerly"
finish recorder_compile_tensor_list
