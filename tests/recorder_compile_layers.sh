#!/bin/sh
# Triton's autotuner under memsim record --fake (compiled.py,
# Program._kernel_keys): a kernel is benchmarked once a process, at the
# first launch of its source, and only if it has several configurations.
# Identical layers launch one kernel (the wrapper's src_to_kernel in
# define_kernel), and a second model of the same shapes compiled on its
# own makes the same sources, whose kernels are compiled and tuned once
# (async_compile.triton's CompiledTritonKernels, the autotune cache); a
# reduction's kernel (a layer norm with its output, a bias gradient with
# the GELU gradient it sums) has one configuration
# (Program._reduction_configs).  tests/recorder/compile_layers.py: N
# layers (LayerNorm, Linear, GELU) of 64 x 256, two training steps.  On
# the H200 (torch 2.11, an empty Inductor cache each) 2 layers, 6 layers
# and 2 layers twice each made 2 L2-flush allocations, one kernel's two
# configurations (the last GELU's: the only pointwise kernel not fused
# into a reduction), and peaked at the bytes below.  The recorder made
# 14, 38 and 28 flushes (one a fused value of a graph's first call), then
# 12 12 12 (once a distinct kernel), 132297728 / 192937984 bytes for 2
# layers.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# flushes NAME ARGS...: record compile_layers.py ARGS to NAME.csv; the
# autotuner's L2-flush allocations
flushes() {
	n=$1
	shift
	$MEMSIM record -o "$tmp/$n.csv" -- "$PY" "$SRC/recorder/compile_layers.py" "$@" \
		2>"$tmp/err" >/dev/null || { echo "record $*: $(tail -3 "$tmp/err")"; return; }
	grep -c ',alloc,[0-9]*,62914560,.*,triton autotune L2 flush$' "$tmp/$n.csv"
}
peaks() { # TRACE -> "allocated reserved" of its replay
	$MEMSIM run --json "$1" >"$tmp/p.json" || { echo "run failed"; return; }
	echo "$(key allocated_bytes.all.peak "$tmp/p.json") $(key reserved_bytes.all.peak "$tmp/p.json")"
}
one=$(flushes one 1)
two=$(flushes two 2)
six=$(flushes six 6)
twice=$(flushes twice 2 twice)
# a compiled module warns at each call when global module hooks are
# registered (OptimizedModule.__call__); the recorder's own do not count
# (compiled.py's _has_any_global_hook, as hooks_aside keeps them out of
# the compiled code): no warning that a real run does not print
grep -q 'global hooks on modules' "$tmp/err" &&
	fail "the recorder's module hooks made torch.compile warn: $(grep -m1 'global hooks' "$tmp/err")"
[ "$one $two $six $twice" = "1 1 1 1" ] ||
	fail "flushes for 1, 2, 6 layers and 2 twice: $one $two $six $twice"
[ "$(peaks "$tmp/two.csv")" = "98460160 100663296" ] ||
	fail "2 layers: peaks $(peaks "$tmp/two.csv"), the H200 98460160 100663296"
[ "$(peaks "$tmp/six.csv")" = "100049408 104857600" ] ||
	fail "6 layers: peaks $(peaks "$tmp/six.csv"), the H200 100049408 104857600"
[ "$(peaks "$tmp/twice.csv")" = "98460160 100663296" ] ||
	fail "2 layers twice: peaks $(peaks "$tmp/twice.csv"), the H200 98460160 100663296"
finish recorder_compile_layers.sh
