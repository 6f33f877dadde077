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
cp "$tmp/runs.db" "$tmp/before.db"

# Bad input: one line, non-zero status, the database untouched.
printf 'seq,time_us,action,addr,size,stream\n0,1,alloc,4096,100,0\n1,2,alloc,4096,7,0\n' >"$tmp/live.csv"
expect_error "live.csv:3: alloc at address 0x1000, which is still live" \
	$MEMSIM run --db "$tmp/runs.db" "$tmp/live.csv"
printf 'action,addr,size\nfree_completed,64,1\n' >"$tmp/unknown.csv"
expect_error "unknown.csv:2: free_completed of unknown address" \
	$MEMSIM run --db "$tmp/runs.db" "$tmp/unknown.csv"
printf 'action,addr,size\nalloc,64,12x\n' >"$tmp/bad.csv"
expect_error "bad.csv:2: size '12x' is not a number" $MEMSIM run "$tmp/bad.csv"
expect_error "max_split_size_mb: 2 is below" $MEMSIM run -c max_split_size_mb:2 "$trace"
expect_error "foo: unknown option" $MEMSIM run -c foo:1 "$trace"
expect_error "garbage_collection_threshold: 1.5 is outside" \
	$MEMSIM run -c garbage_collection_threshold:1.5 "$trace"
expect_error "--cap: '12XB' is not a byte size" $MEMSIM run --cap 12XB "$trace"
expect_error "unknown policy 'nope'" $MEMSIM run --policy nope "$trace"
expect_error "nonexistent.csv: No such file" $MEMSIM run "$tmp/nonexistent.csv"
expect_error "not a database" $MEMSIM run --db "$trace" "$trace"
cmp -s "$tmp/runs.db" "$tmp/before.db" || fail "database changed by failed runs"
runs=$(sqlite3 "$tmp/runs.db" "SELECT count(*) FROM runs" 2>/dev/null || echo 2)
[ "$runs" = 2 ] || fail "runs: $runs"

# Help and usage.
$MEMSIM run --help | grep -q -- "--alloc-conf" || fail "run --help"
$MEMSIM policies | grep -q "max_split_size_mb" || fail "policies"
$MEMSIM --version | grep -q "memsim" || fail "--version"
$MEMSIM frobnicate >/dev/null 2>&1 && fail "unknown command accepted"

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
printf '\200\004\377' >"$tmp/bad.pickle"
expect_error "bad.pickle: byte 2: unknown pickle opcode 0xff" $MEMSIM info "$tmp/bad.pickle"

[ "$fails" -eq 0 ] && echo "cli: all passed"
exit "$fails"
