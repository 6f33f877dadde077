#!/bin/sh
# Triton's autotuner under memsim record --fake (compiled.py,
# Program._kernel_keys): a kernel is benchmarked once a process, at the
# first launch of its source, not at the first launch of each fused node.
# Identical layers launch one kernel (the wrapper's src_to_kernel in
# define_kernel), and a second model of the same shapes compiled on its
# own makes the same sources, whose kernels are compiled and tuned once
# (async_compile.triton's CompiledTritonKernels, the autotune cache).
# tests/recorder/compile_layers.py: N layers (LayerNorm, Linear, GELU),
# two training steps.  On the H200 (torch 2.11) 2 layers, 6 layers and
# 2 layers twice made the same L2-flush allocations (2 each); the
# recorder made 14, 38 and 28 (one a fused node of a graph's first call).
# The first layer reads the graph's input where the others read a GELU:
# 1 layer and 2 layers differ.  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# flushes ARGS...: the autotuner's L2-flush allocations of a recording
flushes() {
	$MEMSIM record -o "$tmp/l.csv" -- "$PY" "$SRC/recorder/compile_layers.py" "$@" \
		2>"$tmp/err" >/dev/null || { echo "record $*: $(tail -3 "$tmp/err")"; return; }
	grep -c ',alloc,[0-9]*,62914560,.*,triton autotune L2 flush$' "$tmp/l.csv"
}
one=$(flushes 1)
two=$(flushes 2)
six=$(flushes 6)
twice=$(flushes 2 twice)
[ "$one $two $six $twice" = "8 12 12 12" ] ||
	fail "flushes for 1, 2, 6 layers and 2 twice: $one $two $six $twice"
finish recorder_compile_layers.sh
