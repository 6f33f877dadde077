#!/bin/sh
# A compiled program's value that Inductor stores because a full
# reduction reads it and a later kernel reads it with the reduction's
# result (compiled.py, Program._across_reduction): fp8 training's
# tensorwise scaling of a gradient (nanochat's --fp8 lm_head backward
# stores the float32 gradient, 512 MiB, then its scaled e5m2 copy).
# tests/recorder/compile_amax.py on the H200 (PyTorch 2.11, 4 December
# 2026): "many" (the value from five inputs: Inductor stores it)
# 1069548032 allocated, 1071644672 reserved; "one" (from one input,
# computed again in each kernel) 264241664 / 266338304.  The recorder
# had no buffer for the value: many 738198016 / 740294656 (-31%); now
# the 256 MiB buffer: 1006633472 / 1071644672, and one 201327104 /
# 203423744, both 62914560 bytes under the H200's allocated peak, one
# L2-flush buffer of Triton's autotuner that the H200 held at its peak
# (the cast kernel's benchmark, not recorded: left).  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
for m in many one; do
	$MEMSIM record -o "$tmp/$m.csv" -- "$PY" "$SRC/recorder/compile_amax.py" \
		$m >/dev/null 2>"$tmp/err" || { fail "record $m: $(tail -3 "$tmp/err")"; continue; }
	$MEMSIM run --json "$tmp/$m.csv" >"$tmp/$m.json" || fail "run $m"
done
g=$(grep -c ',alloc,[0-9]*,268435456,0,activation,compiled many$' "$tmp/many.csv")
[ "$g" = 2 ] || fail "many: $g float32 buffers of the value, want one a call (2)"
grep -q ',268435456,' "$tmp/one.csv" && fail "one: a buffer of the value"
[ "$(key reserved_bytes.all.peak "$tmp/many.json")" = 1071644672 ] ||
	fail "many: reserved $(key reserved_bytes.all.peak "$tmp/many.json"), the H200 1071644672"
[ "$(key allocated_bytes.all.peak "$tmp/many.json")" = $((1069548032 - 62914560)) ] ||
	fail "many: allocated $(key allocated_bytes.all.peak "$tmp/many.json")"
[ "$(key allocated_bytes.all.peak "$tmp/one.json")" = $((264241664 - 62914560)) ] ||
	fail "one: allocated $(key allocated_bytes.all.peak "$tmp/one.json")"
finish recorder_compile_amax
