#!/bin/sh
# memsim record --fake of a compiled optimizer step (compiled.py): Dynamo
# runs the optimizer's _init_group for real while it traces, with the
# recorder's modes set aside, so the state (torch.zeros((), device=cuda)
# step counts) was made on the real GPU and the recording stopped ("Could
# not run 'aten::empty.memory_format' with arguments from the 'CUDA'
# backend"); it is made under the recorder again.  The step mutates its
# inputs: as Inductor compiles it (keep_inference_input_mutations), the
# new values are written in place, no buffer for each (before: 12 more
# 262144-byte buffers a step).  Four 256 x 256 fp32 weights: their
# exp_avg and exp_avg_sq, 8 x 262144 bytes, and 4 step counts of 4 bytes
# are the step's only allocations.  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# step_allocs CSV: the sizes the optimizer step allocated, counted
# ("N x BYTES, ..." by size).
step_allocs() {
	awk -F, '$3 == "alloc" && $8 == "optimizer.step" { print $5 }' "$1" |
		sort -n | uniq -c | awk '{ printf "%s%s x %s", s, $1, $2; s = ", " }
		END { print "" }'
}
$MEMSIM record -o "$tmp/c.csv" -- "$PY" "$SRC/recorder/compile_optim.py" \
	2>"$tmp/err" || fail "record: $(grep -v '^ ' "$tmp/err" | tail -3)"
grep -q "^state \['exp_avg', 'exp_avg_sq', 'step'\] torch.Size(\[256, 256\])$" "$tmp/err" ||
	fail "state: $(grep -v '^memsim' "$tmp/err" | tail -3)"
step_allocs "$tmp/c.csv" >"$tmp/got"
echo "4 x 4, 8 x 262144" >"$tmp/want"
cmp -s "$tmp/got" "$tmp/want" || fail "the step's allocations: $(cat "$tmp/got")"
# The step is foreach kernels (ForeachKernel, one configuration), and
# the step counts' kernels have one element (pointwise() configurations
# that are one after unique_configs): Triton's autotuner benchmarks none
# of them, no L2-flush buffer (before: one a kernel writing an input).
! grep -q "L2 flush" "$tmp/c.csv" ||
	fail "L2 flush buffers in a compiled optimizer step: $(grep -c 'L2 flush' "$tmp/c.csv")"
# A CPU tensor lr changed in place by a scheduler: Dynamo guards its
# dispatch keys, which are built as the compiled frame runs (with the
# recorder's dispatch mode on the stack); before, the guard failed at
# every call, a recompilation each step (eager after recompile_limit).
$MEMSIM record -o "$tmp/t.csv" -- "$PY" "$SRC/recorder/compile_optim.py" tensorlr \
	2>"$tmp/err" || fail "record tensorlr: $(grep -v '^ ' "$tmp/err" | tail -3)"
grep -q "^step frames 1$" "$tmp/err" ||
	fail "tensorlr: Adam.step compiled $(grep '^step frames' "$tmp/err") times"
step_allocs "$tmp/t.csv" >"$tmp/got"
cmp -s "$tmp/got" "$tmp/want" || fail "tensorlr: the step's allocations: $(cat "$tmp/got")"
# A float lr changed by a scheduler: Dynamo's analysis restarts to
# specialize it (TensorifyScalarRestartAnalysis, raised through the
# backend), as in a real compile; before, the backend took it for a graph
# it could not compile and ran that graph eagerly (compile:eager-graph).
$MEMSIM record -o "$tmp/s.csv" -- "$PY" "$SRC/recorder/compile_optim.py" sched \
	2>"$tmp/err" || fail "record sched: $(grep -v '^ ' "$tmp/err" | tail -3)"
grep -q "; 2 assumptions (compile:inductor 2)$" "$tmp/err" ||
	fail "sched: $(grep '^memsim record' "$tmp/err" | tail -2)"
finish recorder_compile_optim.sh
