#!/bin/sh
# memsim record --fake: torch.allclose of GPU tensors (the value rule in
# traces/memsim_record/fake.py, docs/recording-values.md).  Computed where
# the values are known (arange's, and every tensor under --values cpu),
# else assumed true with an assumption naming the line.  Needs Python 3
# and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
R="$SRC/recorder"
for v in rules cpu; do
	$MEMSIM record --values $v -o "$tmp/a.csv" -- "$PY" "$R/values_allclose.py" \
		2>"$tmp/err" || fail "record allclose $v: $(tail -3 "$tmp/err")"
	grep -q "^close True False True True$" "$tmp/err" ||
		fail "allclose $v: $(cat "$tmp/err")"
done
# Under the rules a random tensor has no values: the first is assumed.
$MEMSIM record -o "$tmp/a.csv" -- "$PY" "$R/values_allclose.py" 2>"$tmp/err" ||
	fail "record allclose: $(tail -3 "$tmp/err")"
grep ',annotate,' "$tmp/a.csv" | cut -d, -f7- >"$tmp/out"
echo "assumption,allclose:true values_allclose.py:6 =true" >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "allclose assumptions: $(diff "$tmp/want" "$tmp/out")"
grep -q "; 1 assumption (allclose:true 1)$" "$tmp/err" ||
	fail "allclose summary: $(cat "$tmp/err")"
finish recorder_allclose.sh
