#!/bin/sh
# Plots people put in reports: `plot --kind sweep` against any swept key,
# a model's or recording's (batch) as well as the allocator's, one line per
# value of the rest, named by it (not by the trace); --x of a key that was
# not swept refused in one line; a curve with its cap and the start of a
# partial history drawn.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
DATA=${MSIM_TESTDATA:-tests/data}
model="model:arch=gpt2,layers=2,hidden=256,heads=4,vocab=1000,positions=128,seq=128,steps=2"
$MEMSIM sweep -q -j1 --db "$tmp/s.db" --grid batch=2,4,8 \
	--grid expandable_segments=false,true "$model" || fail "sweep"
# The default x is the first key swept (batch), a line per alloc-conf.
$MEMSIM plot --db "$tmp/s.db" --kind sweep --export "$tmp/batch.csv" || fail "plot --export"
cat >"$tmp/want" <<'CSV'
batch,expandable_segments:False,label
0,0.125,2
1,0.138671875,4
2,0.166015625,8


batch,expandable_segments:True,label
0,0.12109375,2
1,0.13671875,4
2,0.181640625,8
CSV
cmp -s "$tmp/want" "$tmp/batch.csv" || fail "peak against batch: $(cat "$tmp/batch.csv")"
# Against the allocator's key, a line per batch.
$MEMSIM plot --db "$tmp/s.db" --kind sweep --x expandable_segments \
	--export "$tmp/exp.csv" || fail "--x expandable_segments"
grep -qx 'expandable_segments,batch=8,label' "$tmp/exp.csv" || fail "series batch=8: $(cat "$tmp/exp.csv")"
grep -qx '1,0.181640625,True' "$tmp/exp.csv" || fail "batch=8 True: $(cat "$tmp/exp.csv")"
grep -q 'model:' "$tmp/exp.csv" && fail "a series named by the model spec"
expect_error "--x max_split_size_mb: not swept in these runs (what varies: batch expandable_segments)" \
	$MEMSIM plot --db "$tmp/s.db" --kind sweep --x max_split_size_mb --export "$tmp/x.csv"

# The curve of a partial history under a cap: both drawn (an SVG's text).
$MEMSIM run -q --db "$tmp/c.db" --cap 1200MiB "$DATA/snapshots/h200_late.pickle" >/dev/null ||
	fail "run --db"
[ "$(sqlite3 "$tmp/c.db" "SELECT value FROM run_meta WHERE key = 'history_start'")" = 91 ] ||
	fail "history_start not stored"
if command -v gnuplot >/dev/null 2>&1; then
	$MEMSIM plot --db "$tmp/c.db" --kind curve -o "$tmp/curve.svg" >/dev/null ||
		fail "plot curve"
	grep -q ">cap 1.17 GiB<" "$tmp/curve.svg" || fail "curve.svg: no cap line"
	grep -q ">history starts<" "$tmp/curve.svg" || fail "curve.svg: no history start"
	$MEMSIM run -q --db "$tmp/f.db" "$DATA/snapshots/r2_3_full.pickle" >/dev/null
	$MEMSIM plot --db "$tmp/f.db" --kind curve -o "$tmp/full.svg" >/dev/null ||
		fail "plot curve of a full history"
	grep -q "history starts\|>cap " "$tmp/full.svg" && fail "full.svg: marks without a cap or a partial history"
fi
finish plot_marks
