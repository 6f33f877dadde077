#!/bin/sh
# memsim record --fake of a compiled attention block over a jagged nested
# tensor (pytorch/tutorials' transformer_building_blocks.py, kit r40d):
# the rules' Program read a node's number of elements by int(numel()),
# which adds a guard that pins a symbolic size; the jagged tensor's inner
# sizes under AOTAutograd are symbols of no input, and Dynamo's
# produce_guards stopped on them (IndexError: list index out of range).
# compiled.py's _numel_of reads the size hint instead, as Inductor's
# heuristics do (sizevars.size_hint), adding no guard.
# tests/recorder/jagged_compile.py attention: a packed projection, SDPA
# over the ragged sequences (flash or memory-efficient as on the device),
# the out-projection, compiled, two forwards and backwards.  Needs
# PyTorch; skips (77) without.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/jagged_compile.py
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/j.csv" -- "$PY" "$script" attention) \
	>"$tmp/err" 2>&1 || { fail "record: $(tail -3 "$tmp/err")"; finish recorder_jagged_compile_sdpa.sh; }
grep -q "^done" "$tmp/err" || fail "the script did not run to its end"
[ "$(grep -c "ragged size kept: True (507, 256)" "$tmp/err")" = 2 ] ||
	fail "ragged size: $(grep "ragged size" "$tmp/err")"
# compiled once: the sizes' hints pin nothing, so no recompilation
[ "$($MEMSIM info "$tmp/j.csv" 2>/dev/null | grep -c "compile:inductor jagged_compile.py")" = 1 ] ||
	fail "not recorded as compiled once"
finish recorder_jagged_compile_sdpa.sh
