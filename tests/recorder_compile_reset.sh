#!/bin/sh
# memsim record --fake: torch.compiler.reset() (torch._dynamo.reset; OLMo's
# trainer calls it after each in-loop evaluation of a compiled model)
# resets the cudagraph trees where CUDA is available, importing
# torch._inductor.cudagraph_trees, which a PyTorch without CUDA cannot
# (ImportError: _cuda_CUDAAllocator_AllocatorState): the recording
# stopped.  Under the recorder the trees are the recorder's own
# (compiled.py, Runtime): reset runs Dynamo's own reset without that
# import and resets them as reset_cudagraph_trees does (the
# mark-step count; a new tree at the next graphed call).  The compiled
# function compiles again after it and the recording goes on.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/reset.py" <<'PY'
import torch
lin = torch.nn.Linear(64, 64, device="cuda")
f = torch.compile(lambda x: torch.relu(lin(x)) * 2)
x = torch.randn(32, 64, device="cuda")
print("before", tuple(f(x).shape))
torch.compiler.reset()
print("after", tuple(f(x).shape))
torch._dynamo.reset()
print("again", tuple(f(x).shape), torch.cuda.is_available())
PY
$MEMSIM record --fake -o "$tmp/r.csv" -- "$PY" "$tmp/reset.py" \
	>"$tmp/err" 2>&1 || fail "record: $(grep -v '^ ' "$tmp/err" | tail -3)"
for want in "before (32, 64)" "after (32, 64)" "again (32, 64) True"; do
	grep -qx "$want" "$tmp/err" || fail "'$want' not in: $(tail -5 "$tmp/err")"
done
finish recorder_compile_reset.sh
