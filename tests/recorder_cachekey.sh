#!/bin/sh
# memsim record --fake: the fake mode's dispatch cache keys made faster
# (traces/memsim_record/cachekey.py) tell apart every two fake tensors
# PyTorch's own keys tell apart, and hit where they hit, the outputs of
# a hit made faster are PyTorch's (a view's storage too); a small MoE
# (views, in-place ops, routing, no_grad evaluation, backward, AdamW)
# records the same trace with them as with PyTorch's keys.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
traces=$SRC/../traces
PYTHONPATH=$traces "$PY" "$SRC/recorder/cachekey.py" keys 2>"$tmp/err" ||
	fail "keys: $(tail -5 "$tmp/err")"
# PyTorch's keys: a copy of the recorder whose cachekey.install does
# nothing.
mkdir "$tmp/plain"
cp -R "$traces/memsim_record" "$tmp/plain/"
printf '\n\ndef install(torch, mode, base):\n    return None\n' \
	>>"$tmp/plain/memsim_record/cachekey.py"
$MEMSIM record -o "$tmp/fast.csv" -- "$PY" "$SRC/recorder/cachekey.py" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
MEMSIM_PYTHONPATH=$tmp/plain $MEMSIM record -o "$tmp/plain.csv" -- "$PY" \
	"$SRC/recorder/cachekey.py" 2>"$tmp/err" ||
	fail "record with PyTorch's keys: $(tail -3 "$tmp/err")"
[ "$(wc -l <"$tmp/fast.csv")" -gt 100 ] ||
	fail "the trace has $(wc -l <"$tmp/fast.csv") lines"
cmp -s "$tmp/fast.csv" "$tmp/plain.csv" ||
	fail "the traces differ: $(diff "$tmp/plain.csv" "$tmp/fast.csv" | head -4)"
finish recorder_cachekey.sh
