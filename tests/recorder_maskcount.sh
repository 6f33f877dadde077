#!/bin/sh
# memsim record --fake: a bool mask of unknown values counted by two ops
# (x[mask] and mask.sum(), nonzero, masked_select) gets one count: the
# first that needs it gives the mask --dynamic-fraction of its elements
# true, spread evenly, the last true (traces/memsim_record/values.py,
# Values.mask), and every later op computes from those values (the
# segments' lengths add up to the row's).  Before, boolean indexing
# took 16 of the 32 elements and sum().tolist() answered 1 a row, so
# x[mask].split(mask.sum(-1).tolist()) raised.  A cast or a running
# count of the mask fixes its values as a count does.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
R="$SRC/recorder"
for order in sum-first index-first; do
	$MEMSIM record -o "$tmp/m.csv" -- "$PY" "$R/values_maskcount.py" $order \
		2>"$tmp/err" || fail "record $order: $(tail -3 "$tmp/err")"
	grep -q "^counts \[8, 8\] selected 16 rows \[8, 8\]$" "$tmp/err" ||
		fail "$order counts: $(grep -v '^memsim' "$tmp/err" | tail -3)"
	grep -q "^nonzero 16 masked 16$" "$tmp/err" ||
		fail "$order nonzero: $(grep -v '^memsim' "$tmp/err" | tail -3)"
	# each row's last element selected: the segments' lengths add up
	grep -q "^ends \[True, True\] lengths \[16, 16\]$" "$tmp/err" ||
		fail "$order ends: $(grep -v '^memsim' "$tmp/err" | tail -3)"
done
# A mask read as numbers (a cast, a running count) has its values fixed
# there too: the cast's counts and a nonzero of a pad of the mask agree
# (h-net's dynamic chunking).  Before, the cast's sum answered 1 a row
# and the split of 18 positions into [2, 2] raised.
$MEMSIM record -o "$tmp/c.csv" -- "$PY" "$R/values_maskcount.py" cast-pad \
	2>"$tmp/err" || fail "record cast-pad: $(tail -3 "$tmp/err")"
grep -q "^cast \[8, 8\] padded 18 pieces \[9, 9\] running \[8, 8\]$" "$tmp/err" ||
	fail "cast-pad: $(grep -v '^memsim' "$tmp/err" | tail -3)"
# One assumption, where the mask was first counted.
grep ',annotate,' "$tmp/m.csv" | cut -d, -f7- >"$tmp/out"
echo "assumption,nonzero values_maskcount.py:21 =16" >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "assumptions: $(diff "$tmp/want" "$tmp/out")"
$MEMSIM record -o "$tmp/m.csv" --dynamic-fraction 0.25 -- "$PY" \
	"$R/values_maskcount.py" sum-first 2>"$tmp/err" ||
	fail "record 0.25: $(tail -3 "$tmp/err")"
grep -q "^counts \[4, 4\] selected 8 rows \[4, 4\]$" "$tmp/err" ||
	fail "0.25 counts: $(grep -v '^memsim' "$tmp/err" | tail -3)"
grep ',annotate,' "$tmp/m.csv" | cut -d, -f7- >"$tmp/out"
echo "assumption,mask values_maskcount.py:18 =8" >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "0.25 assumptions: $(diff "$tmp/want" "$tmp/out")"
finish recorder_maskcount.sh
