#!/bin/sh
# A graph that AOTAutograd's fake tensors cannot trace for a data-
# dependent value (DataDependentOutputException: a custom operator's
# backward that reads its offsets with .tolist(), as transformers 5.17's
# grouped_mm_fallback did for a compiled fp32 Qwen3-MoE under the
# Trainer's --torch_compile) is, on the GPU, a graph break:
# OutputGraph.call_user_compiler turns the exceptions of
# exceptions_allowed_to_be_fallback into one, the frame runs eagerly and
# Dynamo compiles the frames it calls one by one.  The recorder ran
# Dynamo's whole graph eagerly instead (compile:eager-graph): 65
# allocations here where the GPU makes 35, and the Qwen3-MoE program
# +22% peak allocated.  Now the compiled module allocates as its
# compiled callee alone does.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
for m in outer inner eager; do
	$MEMSIM record --fake -o "$tmp/$m.csv" -- "$PY" \
		"$SRC/recorder/compile_fallback.py" $m >"$tmp/$m.out" 2>&1 ||
		fail "record $m: $(tail -3 "$tmp/$m.out")"
	grep -q "^$m ok\$" "$tmp/$m.out" || fail "$m output: $(tail -3 "$tmp/$m.out")"
	# action, size and category of every row: the sites name the module
	# (OptimizedModule or M), the rest must agree
	grep -v ',annotate,' "$tmp/$m.csv" | cut -d, -f3,5,7 >"$tmp/$m.rows"
done
grep -q 'compile:eager-graph' "$tmp/outer.out" "$tmp/outer.csv" &&
	fail "the graph ran eagerly: $(grep -m1 'runs eagerly' "$tmp/outer.out")"
cmp -s "$tmp/outer.rows" "$tmp/inner.rows" ||
	fail "compiled module: $(grep -c alloc "$tmp/outer.rows") allocations, its compiled callee alone $(grep -c alloc "$tmp/inner.rows")"
# and the callee's compilation shows: eager allocates more
cmp -s "$tmp/inner.rows" "$tmp/eager.rows" &&
	fail "the compiled callee allocates as eager does"
finish recorder_compile_fallback
