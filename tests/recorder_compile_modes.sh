#!/bin/sh
# torch.compile under memsim record --fake: a function compiled as an
# inference graph (under no_grad) and then as a training forward shares
# no Triton kernel between the two.  Inductor's kernel source holds
# optimize_mem in its inductor_meta (TritonKernel.codegen_kernel:
# V.graph.is_inference or V.graph.is_backward), true for an inference
# graph and a backward, false for a training forward, and the autotuner
# is made once a source (compiled.py, Program._kernel_keys).  nanoGPT-moe
# compiled, evaluated at step 0 then trained, on the H200 (PyTorch
# 2.11): each of its 8 forward kernels was tuned in the evaluation's
# graphs and again in the training forward's; the recorder tuned 2 of
# them again.  tests/recorder/compile_modes.py (a GELU of 64 x 256 under
# no_grad, then forward and backward): three L2-flush blocks (the
# inference GELU, the training forward's, the backward's), two before.
# validate/device/compile_modes_probe.py prints the GPU's.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/m.csv" -- "$PY" "$SRC/recorder/compile_modes.py" \
	>"$tmp/out" 2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
grep -q '^ok' "$tmp/out" "$tmp/err" || fail "no result: $(tail -3 "$tmp/err")"
f=$(grep -c ',triton autotune L2 flush$' "$tmp/m.csv")
[ "$f" = 3 ] || fail "$f L2-flush blocks, want 3 (inference, forward, backward)"
finish recorder_compile_modes
