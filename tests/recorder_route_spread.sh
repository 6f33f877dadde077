#!/bin/sh
# The uniform routing (docs/recording-values.md, Routing) gives each
# expert k/E of the tokens; it gave them in blocks of consecutive rows,
# so the 80 tokens of one sequence went to one or two experts, and a
# per-sequence capacity (Switch Transformers' router: a cumsum over the
# sequence, kept while <= expert_capacity) dropped more than half of them
# where random routing, and the GPU, drop almost none: Transformers'
# run_translation.py with Switch Transformers recorded 3.3% low.  The
# rows now go round the experts (values.route_stride): 8 sequences of
# 80 tokens, capacity 32, 8 experts: all 640 tokens routed (256 before),
# as --values cpu computes them and as the H100 routed them (torch 2.11).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/f.csv" -- "$PY" "$SRC/recorder/route_spread.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q '^routed 640 of 640$' "$tmp/out" ||
	fail "routed: $(grep '^routed' "$tmp/out" || tail -3 "$tmp/out")"
grep -q 'routing route_spread.py:[0-9]* =uniform E=8 k=1' "$tmp/f.csv" ||
	fail "no routing assumption: $(grep -m3 assumption "$tmp/f.csv")"
$MEMSIM record --fake --values cpu -o "$tmp/c.csv" -- "$PY" \
	"$SRC/recorder/route_spread.py" >"$tmp/cout" 2>&1 ||
	fail "record --values cpu: $(tail -3 "$tmp/cout")"
grep -q '^routed 640 of 640$' "$tmp/cout" ||
	fail "--values cpu routed: $(grep '^routed' "$tmp/cout" || tail -3 "$tmp/cout")"
finish recorder_route_spread
