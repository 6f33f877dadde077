#!/bin/sh
# The serving loop of tests/recorder/gen_models.py (GPT-2, eight requests,
# torch.cuda.empty_cache() after each) recorded with --fake: its eight
# empty_cache rows free the cached segments as on the H200, so the
# prediction gives the real run's peaks and segment counts
# (tests/data/real_gen/real.tsv, torch.cuda.memory_stats() of the real run).
# Needs Python 3, PyTorch and transformers; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
DATA=${MSIM_TESTDATA:-tests/data}/real_gen
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import transformers' 2>/dev/null || { echo "no transformers: skipped"; exit 77; }

$MEMSIM record -o "$tmp/serve.csv" -- "$PY" "$SRC/recorder/gen_models.py" serve \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
[ "$(grep -c ',empty_cache,' "$tmp/serve.csv")" = 8 ] || fail "empty_cache rows"
want=$(awk -F'\t' '$1 == "serve.real.msimtr" { print $2, $3, $4, $5 }' "$DATA/real.tsv")
for mode in "" --recording; do
	$MEMSIM run --json $mode "$tmp/serve.csv" >"$tmp/o.json" || fail "run $mode"
	o=$tmp/o.json
	got="$(key allocated_bytes.all.peak "$o") $(key reserved_bytes.all.peak "$o") $(key segment.all.allocated "$o") $(key segment.all.freed "$o")"
	[ "$got" = "$want" ] || fail "serve --fake $mode: memsim $got, real $want"
done
finish recorder_serve.sh
