#!/bin/sh
# The command line end to end: exit codes, one-line errors, JSON keys, the
# database and the plot.  Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
tmp=$(mktemp -d /tmp/memsim-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error STATUS_NONZERO PATTERN -- command...: one line naming the cause
expect_error() {
	pattern=$1; shift
	if "$@" >"$tmp/out" 2>"$tmp/err"; then
		fail "$* succeeded"; return
	fi
	lines=$(wc -l <"$tmp/err")
	grep -q -- "$pattern" "$tmp/err" || fail "$*: '$(cat "$tmp/err")' lacks '$pattern'"
	[ "$lines" -eq 1 ] || fail "$*: $lines lines on stderr"
}

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
expect_error "foo: unknown option" $MEMSIM run -c foo:1 "$trace"
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
grep -q "^35 of 46 measured runs reproduced exactly" "$tmp/cmp.txt" ||
	fail "report --compare: $(tail -1 "$tmp/cmp.txt")"
[ "$(grep -c ' torch .* exact  122/122   equal' "$tmp/cmp.txt")" -eq 34 ] ||
	fail "report --compare: not every torch run exact"
grep -q "<svg" "$tmp/validate.svg" || fail "report --compare: no plot"
(cd "$DATA/../.." && $MEMSIM report --db "$tmp/measured.db" --compare --json) |
	grep -c '"exact": true' | grep -q '^35$' || fail "report --compare --json"
expect_error "no measured runs" $MEMSIM report --db "$tmp/runs.db" --compare

# Help and usage.
$MEMSIM run --help | grep -q -- "--alloc-conf" || fail "run --help"
$MEMSIM policies | grep -q "max_split_size_mb" || fail "policies"
$MEMSIM --version | grep -q "memsim" || fail "--version"
$MEMSIM frobnicate >/dev/null 2>&1 && fail "unknown command accepted"

# Generators: a tiny model replays; bad parameters name the option.
$MEMSIM gen model --arch gpt2 --layers 2 --hidden 64 --heads 4 --vocab 100 \
	--positions 32 --batch 2 --seq 16,8 --dtype bf16-amp --steps 2 \
	--checkpoint every:1 -o "$tmp/gen.csv" 2>/dev/null || fail "gen model"
$MEMSIM run "$tmp/gen.csv" | grep -q "allocated" || fail "run of gen model"
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

[ "$fails" -eq 0 ] && echo "cli: all passed"
exit "$fails"
