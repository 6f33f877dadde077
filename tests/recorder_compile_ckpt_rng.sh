#!/bin/sh
# A compiled model with activation checkpointing over attention with
# dropout (transformers' GPT-2 under run_clm.py --gradient_checkpointing
# --torch_compile, kit r36a's clm-gpt2-compile-gc-bf16): the partitioner
# recomputes the seeded attention kernel in the backward and gives each
# graph a generator cloned from the CUDA default generator
# (apply_graphsafe_rng_functionalization: get_default_generator(device)
# .clone_state()); AOTAutograd then reads the device index of the
# forward's fwd_rng_state placeholder (graph_compile.py: fw_metadata.
# graphsafe_rng_state_index).  The recorder's stand-in of the CUDA
# generator (fake.py: a CPU generator that says cuda:0) cloned to a plain
# CPU generator, index None, and AOTAutograd stopped with "fw_metadata.
# graphsafe_rng_state_index must not be None when num_graphsafe_rng_states
# > 0": the graph ran eagerly (assumption compile:eager-graph), every
# activation of the checkpointed blocks held as in eager mode.  A CUDA
# generator's clone_state() is a CUDA generator of the same device
# (CUDAGeneratorImpl::clone_state), as is graphsafe_get_state().  The
# wrapped attention (graphsafe_run_with_rng_state(op, ..., rng_state=g))
# is an extern kernel, Inductor's fallback, that runs the op as ATen
# does: its log-sum-exp (8 x 8 x 512 float32, 131072 bytes) is allocated
# in each block's forward, as in eager mode.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/ck.csv" -- "$PY" \
	"$SRC/recorder/compile_ckpt_rng.py" >"$tmp/out" 2>&1 ||
	fail "record: $(tail -3 "$tmp/out")"
grep -q 'runs eagerly' "$tmp/out" &&
	fail "a graph ran eagerly: $(grep -m1 'runs eagerly' "$tmp/out")"
grep -q 'compile:eager-graph' "$tmp/out" &&
	fail "assumption compile:eager-graph: $(grep -m1 'assumptions' "$tmp/out")"
grep -q '^clone cuda:0 True$' "$tmp/out" ||
	fail "clone_state: $(grep '^clone' "$tmp/out")"
n=$(grep -c ',131072,0,activation,compiled Net' "$tmp/ck.csv")
[ "$n" -ge 2 ] || fail "the attention's log-sum-exp: $n allocations, not 2 or more"
finish recorder_compile_ckpt_rng
