#!/bin/sh
# torch.compile(backend="aot_eager") was recorded as eager (compile:eager),
# but PyTorch's aot_eager (torch._dynamo.backends.debugging) runs Dynamo's
# graph through AOTAutograd: min_cut_rematerialization_partition chooses
# what the forward saves (a pointwise chain's activations recomputed in
# the backward), boxed_nop then runs each graph's aten ops.  Now the
# recorder compiles with PyTorch's own backend and records the graphs'
# ops as they run (compile:aot_eager): here 2 MiB less at the peak than
# eager; aot_eager_default_partitioner saves what the backward needs, as
# eager does.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
for b in eager aot_eager aot_eager_default_partitioner; do
	$MEMSIM record --fake -o "$tmp/$b.csv" -- "$PY" \
		"$SRC/recorder/compile_aot_eager.py" $b >"$tmp/$b.out" 2>&1 ||
		fail "record $b: $(tail -3 "$tmp/$b.out")"
	grep -q "^$b ok" "$tmp/$b.out" || fail "$b: $(tail -3 "$tmp/$b.out")"
done
peak() { sed -n 's/.*peak live \([0-9]*\) bytes.*/\1/p' "$tmp/$1.out"; }
[ "$(peak eager)" = 89133064 ] || fail "eager peak $(peak eager), not 89133064"
[ "$(peak aot_eager)" = 87035912 ] ||
	fail "aot_eager peak $(peak aot_eager), not 87035912 (eager's less 2 MiB)"
[ "$(peak aot_eager_default_partitioner)" = 89133064 ] ||
	fail "aot_eager_default_partitioner peak $(peak aot_eager_default_partitioner), not eager's 89133064"
grep -q 'compile:aot_eager' "$tmp/aot_eager.csv" ||
	fail "no compile:aot_eager assumption"
grep -q 'compile:eager' "$tmp/aot_eager.csv" &&
	fail "aot_eager recorded as eager"
finish recorder_compile_aot_eager
