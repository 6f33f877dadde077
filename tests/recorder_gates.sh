#!/bin/sh
# memsim record --fake: a sparse gate and a distribution's support check
# (traces/memsim_record/values.py's scatter rule, known.py's x == x).
# zeros.scatter(1, top_k_indices, top_k_gates) with routed indices (a
# shadow) and gate values of unknown value: the gates are nonzero where
# the routing puts them, so nonzero() has rows * k rows and
# (gates > 0).sum(0) the routing's counts (6 rows, top-3 of 8 routed
# uniformly, the first two choices kept: experts 0 and 1 three rows
# each, 2 to 4 two).  Normal.cdf checks its argument's support,
# (value == value).all(): True (no NaN), not the --item-bool default.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/values_gates.py" \
	2>"$tmp/err" || fail "record gates: $(tail -3 "$tmp/err")"
grep -q "^gates 12 \[3, 3, 2, 2, 2, 0, 0, 0\]$" "$tmp/err" ||
	fail "gates: $(cat "$tmp/err")"
grep -q "^cdf (6, 8)$" "$tmp/err" || fail "cdf: $(cat "$tmp/err")"
# the gate values scattered: their range's midpoint (a softmax's, [0, 1])
grep -q ',assumption,scatter:src values_gates.py:9 =0.5$' "$tmp/a.csv" ||
	fail "scatter assumption: $(grep assumption "$tmp/a.csv")"
grep -q ',assumption,finite .* =True$' "$tmp/a.csv" ||
	fail "finite assumption: $(grep assumption "$tmp/a.csv")"
finish recorder_gates.sh
