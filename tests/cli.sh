#!/bin/sh
# The command line end to end: exit codes, one-line errors, JSON keys, the
# database and the plot.  Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
DATA=${MSIM_TESTDATA:-tests/data}
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"

trace=$DATA/traces/bert_infer_varlen.csv

# A run with --json has the expected.tsv columns.
$MEMSIM run --json "$trace" >"$tmp/run.json" || fail "run --json"
for key in reserved_bytes.all.peak allocated_bytes.all.peak \
	requested_bytes.all.peak active_bytes.all.peak \
	inactive_split_bytes.all.peak reserved_bytes.all.current \
	segment.all.allocated segment.all.freed segment.all.peak \
	num_device_alloc num_device_free num_alloc_retries num_ooms \
	oversize_allocations.peak oversize_segments.peak \
	inactive_split.all.peak reserved_bytes.small_pool.peak \
	reserved_bytes.large_pool.peak oom_request; do
	grep -q "\"$key\": " "$tmp/run.json" || fail "--json lacks $key"
done
grep -q '"reserved_bytes.all.peak": 1436549120,' "$tmp/run.json" ||
	fail "bert default peak reserved"

# An OOM is a result: exit 0, the request index reported.
$MEMSIM run --json --cap 1GiB "$trace" >"$tmp/oom.json" || fail "OOM run exit status"
grep -q '"oom_request": [0-9]' "$tmp/oom.json" || fail "OOM index missing"
grep -q '"num_ooms": 1,' "$tmp/oom.json" || fail "num_ooms"

# The database and the plot.
$MEMSIM run --db "$tmp/runs.db" --plot "$tmp/curve.png" "$trace" >/dev/null ||
	fail "run --db --plot"
[ -s "$tmp/curve.png" ] || fail "no PNG"
$MEMSIM run --db "$tmp/runs.db" -c max_split_size_mb:128 --plot "$tmp/curve.svg" \
	"$trace" >/dev/null || fail "second run"
grep -q "<svg" "$tmp/curve.svg" || fail "no SVG"
# The blocks at peak reserved add up to it, and the segment map shows them.
[ "$(sqlite3 "$tmp/runs.db" "SELECT sum(size) = (SELECT peak_reserved_bytes FROM runs WHERE id = 1) FROM peak_blocks WHERE run_id = 1")" = 1 ] ||
	fail "peak_blocks do not add up to peak reserved"
$MEMSIM plot --db "$tmp/runs.db" --kind segments --run 1 -o "$tmp/seg.svg" >/dev/null ||
	fail "plot segments"
for s in "allocated block" "free block" "large pool segment"; do
	grep -q "$s" "$tmp/seg.svg" || fail "segments.svg lacks $s"
done
cp "$tmp/runs.db" "$tmp/before.db"

# Bad input: one line, non-zero status, the database untouched.
printf 'seq,time_us,action,addr,size,stream\n0,1,alloc,4096,100,0\n1,2,alloc,4096,7,0\n' >"$tmp/live.csv"
expect_error "live.csv:3: alloc at address 0x1000, which is still live" \
	$MEMSIM run --db "$tmp/runs.db" "$tmp/live.csv"
printf 'action,addr,size\nfree_completed,64,1\n' >"$tmp/unknown.csv"
expect_error "unknown.csv:2: free_completed of unknown address" \
	$MEMSIM run --strict --db "$tmp/runs.db" "$tmp/unknown.csv"
printf 'action,addr,size\nalloc,64,12x\n' >"$tmp/bad.csv"
expect_error "bad.csv:2: size '12x' is not a whole number" $MEMSIM run "$tmp/bad.csv"
expect_error "max_split_size_mb: 2 is below" $MEMSIM run -c max_split_size_mb:2 "$trace"
expect_error "'foo': unknown key" $MEMSIM run -c foo:1 "$trace"
expect_error "garbage_collection_threshold: 1.5 is outside" \
	$MEMSIM run -c garbage_collection_threshold:1.5 "$trace"
expect_error "--cap: '12XB' is not a byte size" $MEMSIM run --cap 12XB "$trace"
expect_error "unknown policy 'nope'" $MEMSIM run --policy nope "$trace"
expect_error "nonexistent.csv: No such file" $MEMSIM run "$tmp/nonexistent.csv"
expect_error "is the input trace" $MEMSIM run --db "$trace" "$trace"
cp "$trace" "$tmp/notdb.csv"
expect_error "not a database" $MEMSIM run --db "$tmp/notdb.csv" "$trace"
cmp -s "$tmp/notdb.csv" "$trace" || fail "run --db changed a file that is not a database"
cmp -s "$tmp/runs.db" "$tmp/before.db" || fail "database changed by failed runs"
runs=$(sqlite3 "$tmp/runs.db" "SELECT count(*) FROM runs" 2>/dev/null || echo 2)
[ "$runs" = 2 ] || fail "runs: $runs"

# memsim compare: one row per policy, every policy by default.
out=$($MEMSIM compare --policies naive,pool,cuda-async -c pool=initial_pool_size_mb:64 "$trace") ||
	fail "compare"
echo "$out" | grep -q "^naive " || fail "compare: no naive row"
echo "$out" | grep -q "^pool\* " || fail "compare: pool parameters not marked"
echo "$out" | grep -q "^\* pool: initial_pool_size_mb:64" || fail "compare: conf line"
n=$($MEMSIM compare "$trace" | grep -c "GiB\|MiB")
[ "$n" -eq "$($MEMSIM policies | sed '/^$/q' | grep -c '^[a-z]')" ] || fail "compare: not every policy"
expect_error "unknown policy 'nope'" $MEMSIM compare --policies naive,nope "$trace"
expect_error "'naive' is not NAME=CONF" $MEMSIM compare -c naive "$trace"
expect_error "policy 'bfc' is not compared" $MEMSIM compare -p naive -c bfc=allow_growth:False "$trace"
expect_error "page_size_kb" $MEMSIM compare -p naive -c naive=page_size_kb:3 "$trace"
expect_error "a calibration needs at least 3 sizes" $MEMSIM compare --calibration "$trace" "$trace"

# report --compare: the H200 measurements beside fresh simulations.
cp "$DATA/validate/measured.db" "$tmp/measured.db"
(cd "$DATA/../.." && $MEMSIM report --db "$tmp/measured.db" --compare \
	-o "$tmp/validate.svg") >"$tmp/cmp.txt" || fail "report --compare"
# 39: the 34 torch-mode runs and five of the six async ones (all but
# bert_infer_varlen: cuda-async's peak is the real one,
# docs/cuda-async.md §3.1); raw runs are compared with naive, which does
# not reproduce them.
grep -q "^39 of 46 measured runs reproduced exactly" "$tmp/cmp.txt" ||
	fail "report --compare: $(tail -1 "$tmp/cmp.txt")"
[ "$(grep -c ' torch .* exact  122/122   equal' "$tmp/cmp.txt")" -eq 34 ] ||
	fail "report --compare: not every torch run exact"
grep -q "<svg" "$tmp/validate.svg" || fail "report --compare: no plot"
(cd "$DATA/../.." && $MEMSIM report --db "$tmp/measured.db" --compare --json) |
	grep -c '"exact": true' | grep -q '^39$' || fail "report --compare --json"
expect_error "no measured runs" $MEMSIM report --db "$tmp/runs.db" --compare

# Help and usage.
$MEMSIM run --help | grep -q -- "--alloc-conf" || fail "run --help"
$MEMSIM policies | grep -q "max_split_size_mb" || fail "policies"
$MEMSIM --version | grep -q "memsim" || fail "--version"
$MEMSIM frobnicate >/dev/null 2>&1 && fail "unknown command accepted"
# A mistyped command, option or capacity: one line, with what was meant,
# exit status 2 for usage.
expect_error "memsim: unknown command 'runn' (did you mean run?)" $MEMSIM runn "$trace"
$MEMSIM runn "$trace" 2>/dev/null; [ $? -eq 2 ] || fail "runn: not exit status 2"
expect_error "memsim: unknown command 'frobnicate' (.memsim --help. lists them)" $MEMSIM frobnicate
expect_error "memsim: --cpa: unknown option (did you mean --cap?)" $MEMSIM run --cpa 16GiB "$trace"
expect_error "memsim: --polcies: unknown option (did you mean --policies?)" $MEMSIM compare --polcies naive "$trace"
expect_error "memsim: --cap needs a value" $MEMSIM run "$trace" --cap
expect_error "memsim: -p needs a value" $MEMSIM run "$trace" -p
expect_error "memsim: -Q: unknown option" $MEMSIM run -Q "$trace"
expect_error "--cap: 16 is 16 bytes; did you mean 16GiB? (write 16B for bytes)" $MEMSIM run --cap 16 "$trace"
expect_error "--capacity: 80 is 80 bytes; did you mean 80GiB?" $MEMSIM run --capacity 80 "$trace"
expect_error "--cap: 24 is 24 bytes; did you mean 24GiB?" $MEMSIM compare --cap 24 "$trace"
$MEMSIM run --json --cap 16MiB "$trace" | grep -q '"cap_bytes": 16777216,' ||
	fail "--cap 16MiB"
$MEMSIM run --json --cap 1048576 "$trace" | grep -q '"cap_bytes": 1048576,' ||
	fail "--cap 1048576 (a bare count of 1 MiB or more is bytes)"

# Generators: a tiny model replays; bad parameters name the option.
$MEMSIM gen model --arch gpt2 --layers 2 --hidden 64 --heads 4 --vocab 100 \
	--positions 32 --batch 2 --seq 16,8 --dtype bf16-amp --steps 2 \
	--checkpoint every:1 -o "$tmp/gen.csv" 2>/dev/null || fail "gen model"
$MEMSIM run "$tmp/gen.csv" | grep -q "allocated" || fail "run of gen model"
$MEMSIM gen model --arch llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 \
	--vocab 100 --positions 64 --batch 2 --seq 16 --dtype bf16 --inference \
	--generate 4 --weights int8 -o "$tmp/gen.csv" 2>/dev/null || fail "gen llama"
$MEMSIM run "$tmp/gen.csv" | grep -q "allocated" || fail "run of gen llama"
$MEMSIM run model:arch=gpt2,layers=2,hidden=64,heads=4,vocab=100,positions=32,batch=2,seq=16,accum=2 |
	grep -q "allocated" || fail "run of model spec with accum"
expect_error "generate: needs --inference" $MEMSIM run \
	model:arch=gpt2,layers=2,hidden=64,heads=4,vocab=100,generate=2
expect_error "--weights: unknown weights 'int4'" $MEMSIM gen model \
	--arch llama --inference --weights int4 -o "$tmp/x.csv"
expect_error "weight-only quantization is modelled for decoder inference" \
	$MEMSIM gen model --arch llama --weights int8 -o "$tmp/x.csv"
expect_error "pass --positions=32" $MEMSIM gen model --arch gpt2 --layers 2 \
	--hidden 64 --heads 4 --vocab 100 --positions 32 --seq 30 --inference \
	--generate 3 -o "$tmp/x.csv"
$MEMSIM gen random --seed 7 --requests 500 --streams 2 -o "$tmp/rnd.csv" \
	2>/dev/null || fail "gen random"
$MEMSIM run "$tmp/rnd.csv" | grep -q "allocated" || fail "run of gen random"
expect_error "--checkpoint: 'every:x' is not" $MEMSIM gen model --arch gpt2 \
	--checkpoint every:x -o "$tmp/x.csv"
expect_error "--dtype: unknown dtype 'fp8'" $MEMSIM gen model --arch gpt2 \
	--dtype fp8 -o "$tmp/x.csv"
expect_error "--seq: 2048 is not in .1, --positions=1024." $MEMSIM gen model \
	--arch gpt2 --seq 2048 -o "$tmp/x.csv"
expect_error "--sizes: 'lognormal:x' is not" $MEMSIM gen random \
	--sizes lognormal:x -o "$tmp/x.csv"
$MEMSIM policies | grep -q "^checkpoint:" || fail "policies: strategies"

# convert and info: every format, the same run; the recording reproduced.
$MEMSIM convert "$trace" "$tmp/t.msimtr" >/dev/null || fail "convert to bin"
$MEMSIM convert --to rmm "$tmp/t.msimtr" "$tmp/t.rmm" >/dev/null || fail "convert to rmm"
$MEMSIM convert "$tmp/t.rmm" "$tmp/t.pickle" >/dev/null || fail "convert to pickle"
for f in "$tmp/t.msimtr" "$tmp/t.rmm" "$tmp/t.pickle" "$DATA/pickles/bert_infer_varlen.pickle"; do
	$MEMSIM run --json "$f" | grep -q '"reserved_bytes.all.peak": 1436549120,' ||
		fail "run $f"
done
$MEMSIM info "$DATA/traces/train_eval_emptycache.csv" |
	grep -q "empty_cache 2 hidden calls found" || fail "info: empty_cache calls"
$MEMSIM run --recording --json "$DATA/pickles/train_eval_emptycache.pickle" |
	grep -q '"num_sync_all_streams": 2,' || fail "run --recording"
# The snapshot's segments state: shown by info, reached by the replay.
$MEMSIM info "$DATA/pickles/prefetch_2stream.pickle" |
	grep -q "reserved 836.00 MiB (876609536 bytes)" || fail "info: segments"
$MEMSIM run --recording "$DATA/pickles/prefetch_2stream.pickle" |
	grep -q "^snapshot state: matches (37 segments" ||
	fail "run --recording: snapshot state"
printf '\200\004\377' >"$tmp/bad.pickle"
expect_error "bad.pickle: byte 2: unknown pickle opcode 0xff" $MEMSIM info "$tmp/bad.pickle"

# The trace hash is the whole file's, whether the run read it all or an
# OOM stopped it at the first request.
for f in "$trace" "$DATA/pickles/bert_infer_varlen.pickle" "$tmp/t.msimtr" "$tmp/t.rmm"; do
	h1=$($MEMSIM run --json "$f" | sed -n 's/.*"trace_hash": "\([0-9a-f]*\)".*/\1/p')
	h2=$($MEMSIM run --json --cap 1KB "$f" | sed -n 's/.*"trace_hash": "\([0-9a-f]*\)".*/\1/p')
	[ -n "$h1" ] && [ "$h1" = "$h2" ] || fail "trace hash of $f: '$h1' vs '$h2'"
done

# The help agrees with the program: policies --help is help, and every
# format convert --to accepts is in convert --help.
$MEMSIM policies --help | grep -q "^usage: memsim policies" || fail "policies --help"
$MEMSIM policies --help | grep -q "^pytorch:" && fail "policies --help lists policies"
expect_error "policies: unexpected argument 'x'" $MEMSIM policies x
for to in csv pickle rmm bin; do
	$MEMSIM convert --help | grep -q -- "--to FORMAT .* $to\b" ||
		fail "convert --help lacks --to $to"
	$MEMSIM convert --to "$to" "$trace" "$tmp/conv.$to" >/dev/null ||
		fail "convert --to $to"
done

# gen random --requests N writes N requests (allocations and frees).
for n in 500 7; do
	$MEMSIM gen random --seed 3 --requests $n -o "$tmp/rnd$n.csv" 2>/dev/null ||
		fail "gen random --requests $n"
	$MEMSIM info "$tmp/rnd$n.csv" | grep -q "^requests   $n (" ||
		fail "gen random --requests $n: $($MEMSIM info "$tmp/rnd$n.csv" | grep ^requests)"
done

# An installed tree plots with its own scripts, wherever it was installed
# (DESTDIR staging, a moved prefix): stage one by hand, with a curve.gp that
# leaves a mark, and plot with it.
stage=$tmp/stage/usr
mkdir -p "$stage/bin" "$stage/share/memsim/plots"
# memsim links the shared libmemsim: in the build tree $MEMSIM is
# libtool's wrapper script, so stage the program it runs, with its library.
real=$MEMSIM
libs=
if [ -f "$(dirname "$MEMSIM")/.libs/memsim" ]; then
	real=$(dirname "$MEMSIM")/.libs/memsim
	libs=$(cd "$(dirname "$MEMSIM")/.libs" && pwd)
fi
cp "$real" "$stage/bin/memsim"
cp "$DATA"/../../plots/*.gp "$stage/share/memsim/plots/"
{ printf 'system("touch %s/staged-script-ran")\n' "$tmp"
  cat "$DATA/../../plots/curve.gp"; } >"$stage/share/memsim/plots/curve.gp"
env -u MEMSIM_PLOTS_DIR LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$stage/bin/memsim" run --db "$tmp/staged.db" --plot "$tmp/staged.png" "$trace" \
	>/dev/null || fail "staged run --plot"
[ -f "$tmp/staged-script-ran" ] || fail "staged memsim did not use its own plots"

# Several inputs: processes on one 64 MiB GPU (tests/check_together.c
# tells the story): later's request 1 finds the GPU full of cached's
# cached segment.
tg=$DATA/together
$MEMSIM run --json --capacity 64MiB "$tg/cached.csv" "$tg/later.csv" \
	>"$tmp/tg.json" || fail "run of two processes"
for kv in '"capacity_bytes": 67108864,' '"time": "relative",' \
	'"gpu_peak_bytes": 62914560,' '"gpu_peak_process": 2,' \
	'"gpu_peak_request": 0,' '"gpu_bytes_now": 62914560,' \
	'"oom_cause": "gpu",' '"oom_cause": null,' \
	'"gpu_full_failures": 2,' '"held_at_gpu_peak": 20971520,' \
	'"oom_request": 1,' '"oom_request": -1,' \
	'"reserved_bytes.all.peak": 41943040,' '"processes": \[{'; do
	grep -q "$kv" "$tmp/tg.json" || fail "two processes: no $kv"
done
[ "$(grep -c '"process": ' "$tmp/tg.json")" -eq 2 ] || fail "two process objects"
$MEMSIM run --capacity 64MiB "$tg/cached.csv" "$tg/later.csv" >"$tmp/tg.txt" ||
	fail "two processes, text"
grep -q "^OOM        process 2 at its request 1: the GPU was full" "$tmp/tg.txt" ||
	fail "two processes: the OOM line"
$MEMSIM run --json --absolute-time --capacity 64MiB "$tg/grows.csv" "$tg/one.csv" \
	>"$tmp/abs.json" || fail "--absolute-time"
grep -q '"gpu_peak_bytes": 54525952,' "$tmp/abs.json" || fail "--absolute-time peak"
# Per-process options: once for all, or once per input.
$MEMSIM run --json --capacity h200:1g.18gb -p pytorch -p bfc --cap 32MiB \
	"$tg/cached.csv" "$tg/later.csv" >"$tmp/mig.json" || fail "MIG capacity"
grep -q '"capacity_bytes": 18000000000,' "$tmp/mig.json" || fail "h200:1g.18gb"
grep -q '"capacity_name": "h200:1g.18gb",' "$tmp/mig.json" || fail "capacity_name"
grep -q '"policy": "bfc",' "$tmp/mig.json" || fail "second process's policy"
[ "$(grep -c '"cap_bytes": 33554432,' "$tmp/mig.json")" -eq 2 ] || fail "--cap for all"
expect_error "the MIG profiles of h200 are 1g.18gb" \
	$MEMSIM run --capacity h200:1g.5gb "$tg/cached.csv"
expect_error "--alloc-conf given 3 times for 2 inputs" \
	$MEMSIM run -c a:1 -c b:2 -c c:3 "$tg/cached.csv" "$tg/later.csv"
expect_error "--db: one input at a time" \
	$MEMSIM run --db "$tmp/x.db" "$tg/cached.csv" "$tg/later.csv"
expect_error "--policy (process 2): unknown policy 'nope'" \
	$MEMSIM run -p pytorch -p nope "$tg/cached.csv" "$tg/later.csv"
expect_error "nonexistent.csv: No such file" \
	$MEMSIM run "$tg/cached.csv" "$tmp/nonexistent.csv"

# memsim bench with no TRACE finds its example in a build tree (it is
# installed only by make install).
(cd "$tmp" && $MEMSIM bench --requests 1000 --json) >"$tmp/bench.json" ||
	fail "bench with no TRACE"
grep -q '"trace": ".*gpt2_varlen.csv"' "$tmp/bench.json" ||
	fail "bench with no TRACE: $(cat "$tmp/bench.json")"

# memsim bench runs the minimal path beside memsim: the same figures on a
# single-stream trace (in memory, and FILE end to end from its binary
# form), ratios; a second stream is not compared.
$MEMSIM convert --repeat 2 "$MSIM_TESTDATA/traces/gpt2_varlen.csv" \
	"$tmp/bench2.msimtr" >/dev/null || fail "convert --repeat for bench"
$MEMSIM bench --requests 50000 --runs 1 --json \
	"$MSIM_TESTDATA/traces/gpt2_varlen.csv" "$tmp/bench2.msimtr" \
	"$MSIM_TESTDATA/traces/prefetch_2stream.csv" >"$tmp/bench.json" ||
	fail "bench with FILEs"
grep -q '"minimal": {"same": true, "requests": [0-9]*, "replay_cpu_s": [0-9.]*, "ratio": [0-9.]*}' \
	"$tmp/bench.json" || fail "bench minimal: $(cat "$tmp/bench.json")"
grep -q 'bench2.msimtr", "memsim_run_cpu_s": [0-9.]*, "same": true, "requests": 47526,' \
	"$tmp/bench.json" || fail "bench FILE: $(cat "$tmp/bench.json")"
grep -q 'prefetch_2stream.csv", "memsim_run_cpu_s": [0-9.]*, "same": false, "why": ".*does not model' \
	"$tmp/bench.json" || fail "bench 2 streams: $(cat "$tmp/bench.json")"
expect_error "--runs" $MEMSIM bench --runs 0
$MEMSIM bench --requests 1000 --runs 1 --sweep --jobs 1 --json \
	"$MSIM_TESTDATA/traces/gpt2_varlen.csv" >"$tmp/bench.json" ||
	fail "bench --sweep"
grep -q '"sweep": {"settings": 60, "jobs": 1, "sweep_cpu_s": [0-9.]*, "run_cpu_s": [0-9.]*, "ratio": [0-9.]*, "wall_s": [0-9.]*, "wall_one_job_s": [0-9.]*, "scaling": 1.00}' \
	"$tmp/bench.json" || fail "bench --sweep: $(cat "$tmp/bench.json")"

# A binary trace holds the request stage's ids and pairs its frees: it
# reads back to the same entries, and runs as its CSV does.
$MEMSIM convert "$trace" "$tmp/b.msimtr" >/dev/null || fail "convert to bin"
$MEMSIM convert "$tmp/b.msimtr" "$tmp/b.csv" >/dev/null || fail "convert bin back"
cmp -s "$trace" "$tmp/b.csv" || fail "csv -> bin -> csv differs"
$MEMSIM run --json "$trace" | grep -v '"trace\|wall\|setting_key' >"$tmp/a.json"
$MEMSIM run --json "$tmp/b.msimtr" | grep -v '"trace\|wall\|setting_key' >"$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "bin run differs from csv run"
# The portable CRC32C (CPUs without SSE4.2) writes and checks the same sums.
MEMSIM_PORTABLE_CRC32C=1 $MEMSIM convert "$trace" "$tmp/p.msimtr" >/dev/null ||
	fail "convert with the portable CRC32C"
cmp -s "$tmp/b.msimtr" "$tmp/p.msimtr" || fail "portable CRC32C differs"
MEMSIM_PORTABLE_CRC32C=1 $MEMSIM run --json "$tmp/b.msimtr" |
	grep -v '"trace\|wall\|setting_key' >"$tmp/p.json"
cmp -s "$tmp/a.json" "$tmp/p.json" || fail "bin run with portable CRC32C differs"

# A first try without -o: one line that shows the form, not the help.
expect_error "record: -o OUT is required (memsim record -o trace.csv -- python3" \
	$MEMSIM record -- python3 train.py

finish cli
