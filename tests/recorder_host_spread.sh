#!/bin/sh
# memsim record --fake: several floats of unknown values that cross to the
# host get distinct values increasing in memory order, 0.5 to 1.5 about
# their mean 1.0 (assumption host:spread), so that selections by rank on
# the host select as many as in a real run: Torch-Pruning's global
# pruning reads each layer's importance scores on the host, and with one
# value everywhere (host:float's 1.0) every score tied and nothing was
# pruned (kit r40b: +44% peak allocated over --values cpu).  One float
# alone is still 1.0.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/host_spread.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "pruned 112 of 224" "distinct True" "bounds in order True" \
	"box True" "mean 1.0" "one 1.0"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
$MEMSIM info "$tmp/a.csv" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
grep -q "host:spread host_spread.py:.* =0.5 to 1.5" "$tmp/info" ||
	fail "no host:spread assumption: $(cat "$tmp/info")"
finish recorder_host_spread.sh
