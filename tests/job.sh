#!/bin/sh
# One experiment, one row (lab/job.h): run --db, compare --db and sweep of
# one setting store identical rows, the second recognised as the same
# setting; the options every command parses the same way; the drifts of
# issue 12 each pinned.  Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
DATA=${MSIM_TESTDATA:-tests/data}
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"

# Everything a database holds of its runs but ids, dates and wall times.
dump() {
	sqlite3 "$1" "SELECT kind, trace_path, trace_hash, trace_format, policy,
	    params, cap_bytes, addresses, requests, oom_request,
	    peak_reserved_bytes, peak_allocated_bytes, peak_requested_bytes,
	    frag_at_peak, frag_mean, ext_frag_max, num_device_alloc,
	    num_device_free, num_alloc_retries, num_ooms, sim_time_ns,
	    capacity_bytes, setting_key, strategy FROM runs ORDER BY id;
	  SELECT key, value FROM run_meta ORDER BY run_id, key;
	  SELECT name, value FROM stats ORDER BY run_id, name;
	  SELECT count(*), sum(size) FROM peak_blocks;
	  SELECT count(*), sum(size), sum(request) FROM segment_events;
	  SELECT count(*), sum(reserved_bytes), sum(time_ns) FROM timeline;"
}
runs() { sqlite3 "$1" "SELECT count(*) FROM runs"; }

# 1. The same setting by run, compare and sweep: identical rows.  Two
# streams, so free_requested rows matter (deferred frees), and a cap with
# the garbage collector, so the cap must reach the run.
p2=$DATA/traces/prefetch_2stream.csv
$MEMSIM run --db "$tmp/run.db" --cap 700MiB -c garbage_collection_threshold:0.6 \
	"$p2" >/dev/null || fail "run --db"
$MEMSIM compare --db "$tmp/cmp.db" -p pytorch --cap 700MiB \
	-c pytorch=garbage_collection_threshold:0.6 "$p2" >/dev/null || fail "compare --db"
$MEMSIM sweep -q -j1 --db "$tmp/sweep.db" --cap 700MiB \
	--grid garbage_collection_threshold=0.6 "$p2" >/dev/null || fail "sweep"
dump "$tmp/run.db" >"$tmp/run.rows"
dump "$tmp/cmp.db" >"$tmp/cmp.rows"
dump "$tmp/sweep.db" >"$tmp/sweep.rows"
grep -q "garbage_collection_threshold:0.6|734003200|model" "$tmp/run.rows" ||
	fail "run row: $(head -1 "$tmp/run.rows")"
cmp -s "$tmp/run.rows" "$tmp/cmp.rows" || fail "compare --db stores another row than run --db: $(diff "$tmp/run.rows" "$tmp/cmp.rows" | head -4)"
cmp -s "$tmp/run.rows" "$tmp/sweep.rows" || fail "sweep stores another row than run --db: $(diff "$tmp/run.rows" "$tmp/sweep.rows" | head -4)"

# ... and the second is recognised as the same experiment.
$MEMSIM compare --db "$tmp/run.db" -p pytorch --cap 700MiB \
	-c pytorch=garbage_collection_threshold:0.6 "$p2" >"$tmp/out" || fail "compare again"
grep -q "^stored runs 1 in " "$tmp/out" || fail "compare again: $(tail -1 "$tmp/out")"
[ "$(runs "$tmp/run.db")" = 1 ] || fail "compare then run: $(runs "$tmp/run.db") runs"
out=$($MEMSIM sweep -j1 --db "$tmp/run.db" --cap 700MiB \
	--grid garbage_collection_threshold=0.6 "$p2") || fail "sweep again"
echo "$out" | grep -q ": 0 run, 1 already stored, 0 failed" || fail "sweep after run: $out"
$MEMSIM run --db "$tmp/cmp.db" --cap 700MiB -c garbage_collection_threshold:0.6 \
	"$p2" | grep -q "^stored     run 1 in" || fail "run after compare: not run 1"
[ "$(runs "$tmp/cmp.db")" = 1 ] || fail "run after compare: $(runs "$tmp/cmp.db") runs"

# ... while other rows of the same trace are another experiment.
$MEMSIM run --db "$tmp/run.db" --requests-only --cap 700MiB \
	-c garbage_collection_threshold:0.6 "$p2" >/dev/null || fail "run --requests-only"
$MEMSIM run --db "$tmp/run.db" --recording "$DATA/pickles/prefetch_2stream.pickle" >/dev/null ||
	fail "run --recording"
$MEMSIM run --db "$tmp/run.db" --addresses trace "$DATA/pickles/prefetch_2stream.pickle" >/dev/null ||
	fail "run --addresses trace"
[ "$(runs "$tmp/run.db")" = 4 ] || fail "requests only, recording: $(runs "$tmp/run.db") runs, not 4"

# 2. compare models time as run does (msim_timemodel_events), for
# cuda-async too.
bert=$DATA/traces/bert_infer_varlen.csv
ms=$($MEMSIM run --json -p cuda-async "$bert" | sed -n 's/.*"modelled_device_ms": \([0-9.]*\).*/\1/p')
cms=$($MEMSIM compare -p cuda-async "$bert" | awk '$1 == "cuda-async" {print $NF}')
[ -n "$ms" ] && awk -v a="$ms" -v b="$cms" 'BEGIN {d = a - b; exit !(d < 0.006 && d > -0.006)}' ||
	fail "compare's cuda-async time $cms ms, run's $ms ms"

# 3. compare takes --cap, --fraction and model specs as run does.
$MEMSIM compare -p pytorch --cap 16GiB "$bert" | grep -q "^cap   16.00 GiB" ||
	fail "compare --cap"
$MEMSIM compare -p pytorch --fraction 0.5 "$bert" | grep -q "^cap   " ||
	fail "compare --fraction"
spec="model:arch=gpt2,layers=2,hidden=64,heads=4,vocab=100,positions=32,batch=2,seq=16,steps=2"
r=$($MEMSIM run --json "$spec" | sed -n 's/.*"reserved_bytes.all.peak": \([0-9]*\),.*/\1/p')
$MEMSIM compare -p pytorch "$spec" >"$tmp/out" || fail "compare of a model spec"
[ -n "$r" ] && grep -q "^trace $spec" "$tmp/out" || fail "compare of a model spec: $(head -1 "$tmp/out")"

# 4. bench replays what run replays: a free_requested row gives the bytes
# back at once (allocated peak 2 MiB, not 3), the block at free_completed.
printf 'action,addr,size\nalloc,4096,1048576\nalloc,8392704,1048576\nfree_requested,4096,1048576\nalloc,16781312,1048576\nfree_completed,4096,1048576\n' >"$tmp/deferred.csv"
$MEMSIM run --json "$tmp/deferred.csv" | grep -q '"allocated_bytes.all.peak": 2097152,' ||
	fail "run: free_requested not applied"
$MEMSIM bench --json --requests 10 "$tmp/deferred.csv" |
	grep -q '"allocated_bytes.all.peak": 2097152}' || fail "bench: free_requested not applied"

# 5. tune prints and stores the setting it ran: with a batch axis, the
# winner's batch, and the default beside it is the same model.
small="model:arch=gpt2,layers=2,hidden=256,heads=4,vocab=1000,positions=128,seq=128,steps=2"
$MEMSIM tune --cap 200MiB -j1 -g batch=8,64 -g max_split_size_mb=none,64 \
	-g garbage_collection_threshold=0 -g roundup_power2_divisions=0 \
	--db "$tmp/tune.db" "$small" >"$tmp/tune.txt" || fail "tune with a batch axis"
grep -q "^setting  *batch=8  *batch=8$" "$tmp/tune.txt" || fail "tune: the setting not printed"
grep -q "^OOM  *none  *none$" "$tmp/tune.txt" || fail "tune: $(grep ^OOM "$tmp/tune.txt")"
[ "$(sqlite3 "$tmp/tune.db" "SELECT result FROM sweeps")" = "batch=8" ] ||
	fail "tune: stored result $(sqlite3 "$tmp/tune.db" "SELECT result FROM sweeps")"
[ "$(sqlite3 "$tmp/tune.db" "SELECT count(*) FROM runs WHERE trace_path LIKE '%,batch=8,%' AND oom_request < 0")" = 1 ] ||
	fail "tune: the stored run is not the batch=8 one"

# 6. checkpoint=budget:B under a cap budgets what the allocator reserves
# under that cap: the schedule chosen fits.
s="model:arch=gpt2,batch=8,seq=1024,steps=2,checkpoint=budget:9GiB"
$MEMSIM run --json --cap 9GiB "$s" >"$tmp/budget.json" || fail "run of a budget"
grep -q '"num_ooms": 0,' "$tmp/budget.json" || fail "budget:9GiB under --cap 9GiB runs out of memory"
r=$(sed -n 's/.*"reserved_bytes.all.peak": \([0-9]*\),.*/\1/p' "$tmp/budget.json")
[ -n "$r" ] && [ "$r" -le 9663676416 ] || fail "budget:9GiB reserves $r bytes"
# Without a cap it is the generated peak allocated, as before.
$MEMSIM run --json "$s" | grep -q '"allocated_bytes.all.peak": [0-9]*,' || fail "budget without a cap"

# 7. info counts requests as run does: allocs and frees, not the hidden
# empty_cache() calls it finds.
te=$DATA/traces/train_eval_emptycache.csv
line=$($MEMSIM info "$te" | grep "^requests ")
n=$(echo "$line" | sed -n 's/^requests *\([0-9]*\) (\([0-9]*\) allocs, \([0-9]*\) frees)$/\1 \2 \3/p')
set -- $n
[ $# -eq 3 ] && [ "$1" -eq $(($2 + $3)) ] || fail "info: $line"
rq=$($MEMSIM run --json "$te" | sed -n 's/.*"requests": \([0-9]*\),.*/\1/p')
[ "$1" = "$rq" ] || fail "info says $1 requests, run replays $rq"

# 8. gen model --arch bert without --inference: no training generator, so
# a clear refusal, not inference in silence; with --inference it generates.
expect_error "--arch bert: only --inference is modelled" \
	$MEMSIM gen model --arch bert --layers 2 --batch 2 --seq 16 -o "$tmp/bert.csv"
[ -e "$tmp/bert.csv" ] && fail "gen model --arch bert wrote a trace"
$MEMSIM gen model --arch bert --inference --layers 2 --batch 2 --seq 16 \
	-o "$tmp/bert.csv" 2>/dev/null || fail "gen model --arch bert --inference"
expect_error "only --inference is modelled" $MEMSIM run "model:arch=bert,layers=2,batch=2,seq=16"

# 9. Long options are written in full, in every command.
expect_error "--capac: not an option; options are written in full (did you mean --capacity?)" \
	$MEMSIM compare --capac=1TB --policies pytorch "$bert"
expect_error "--poli: not an option; options are written in full (did you mean --policy?)" \
	$MEMSIM run --poli naive "$bert"
for cmd in "sweep --li" "tune --ca 1GiB" "report --js" "info --dev 0" "bench --req 1"; do
	# shellcheck disable=SC2086
	expect_error "not an option; options are written in full" $MEMSIM $cmd "$bert"
done

# 10. The guide's compare example prints what the guide shows (the
# plot aside).
top=$DATA/../..
sed -n '/^    \$ memsim compare tests\/data\/traces\/gpt2_varlen.csv --plot/,/^    plotted /p' \
	"$top/docs/guide.md" | sed -e '1d' -e '$d' -e 's/^    //' >"$tmp/readme.cmp"
[ -s "$tmp/readme.cmp" ] || fail "docs/guide.md: no compare example"
(cd "$top" && $MEMSIM compare tests/data/traces/gpt2_varlen.csv) >"$tmp/now.cmp" ||
	fail "guide's compare example"
cmp -s "$tmp/readme.cmp" "$tmp/now.cmp" ||
	fail "guide's compare example differs: $(diff "$tmp/readme.cmp" "$tmp/now.cmp" | head -5)"

finish job
