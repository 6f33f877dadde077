#!/bin/sh
# Sweeps end to end: a sweep equals its settings run one by one; a sweep
# killed with SIGKILL and resumed stores every setting exactly once; three
# shards merged equal the whole sweep; report, plot and tune on the result;
# bad input leaves the database as it was.  Run by `make check`.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
tmp=$(mktemp -d /tmp/memsim-sweep-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

bert=$DATA/traces/bert_infer_varlen.csv
resnet=$DATA/traces/resnet50_amp.csv
gpt2=$DATA/traces/gpt2_varlen.csv
# 5 x 3 settings under a cap over two traces: 30 settings.
grid="--grid max_split_size_mb=none,64,128,256,512 --grid garbage_collection_threshold=0,0.6,0.8 --cap 2GiB"

# The rows that must agree: everything but the run id and the wall time.
rows() { $MEMSIM report --csv --db "$1" | tail -n +2 | cut -d, -f2-20 | sort; }

# 1. A sweep gives the rows of its settings run one by one.
# shellcheck disable=SC2086
$MEMSIM sweep -q -j2 --db "$tmp/sweep.db" $grid "$bert" "$resnet" || fail "sweep"
# shellcheck disable=SC2086
$MEMSIM sweep --list $grid "$bert" "$resnet" >"$tmp/list"
[ "$(wc -l <"$tmp/list")" -eq 30 ] || fail "list: $(wc -l <"$tmp/list") settings"
# (cut, not read: the parameters of the default setting are empty)
while read -r line; do
	f() { printf '%s\n' "$line" | cut -f"$1"; }
	$MEMSIM run --db "$tmp/one.db" -p "$(f 2)" -c "$(f 3)" --cap "$(f 4)" \
		--addresses "$(f 5)" "$(f 1)" >/dev/null || fail "run $line"
done <"$tmp/list"
rows "$tmp/sweep.db" >"$tmp/a"
rows "$tmp/one.db" >"$tmp/b"
[ "$(wc -l <"$tmp/a")" -eq 30 ] || fail "sweep stored $(wc -l <"$tmp/a") rows"
cmp -s "$tmp/a" "$tmp/b" || { fail "sweep differs from one by one"; diff "$tmp/a" "$tmp/b" | head; }
# ... and the same rows of results: the blocks at peak (a sweep replays a
# setting again up to its peak for them, run keeps them as it goes), the
# segment events and the timeline.
results() {
	sqlite3 "$1" "SELECT r.setting_key, b.addr, b.size, b.state FROM
	  peak_blocks b JOIN runs r ON r.id = b.run_id ORDER BY 1, 2;
	  SELECT r.setting_key, e.seq, e.request, e.action, e.addr, e.size FROM
	  segment_events e JOIN runs r ON r.id = e.run_id ORDER BY 1, 2;
	  SELECT r.setting_key, t.request, t.time_ns, t.allocated_bytes,
	  t.reserved_bytes, t.largest_free_bytes FROM timeline t JOIN runs r
	  ON r.id = t.run_id ORDER BY 1, 2"
}
results "$tmp/sweep.db" >"$tmp/ra"
results "$tmp/one.db" >"$tmp/rb"
n=$(sqlite3 "$tmp/sweep.db" "SELECT count(DISTINCT run_id) FROM peak_blocks")
[ "$n" -eq 30 ] || fail "sweep: $n runs of 30 have their blocks at peak"
cmp -s "$tmp/ra" "$tmp/rb" ||
	{ fail "sweep's rows of results differ"; diff "$tmp/ra" "$tmp/rb" | head; }

# 1b. A sweep reads each trace once and shares it with its settings: a
# binary trace too; a partial history (seeded where met) is read by each
# setting.  Both give the rows of their settings run one by one.
printf '%s\n' seq,time_us,action,addr,size,stream \
	0,1,free_completed,4096,1048576,0 1,2,alloc,8192,2097152,0 \
	2,3,free_requested,8192,2097152,0 3,4,free_completed,8192,2097152,0 \
	>"$tmp/partial.csv"
$MEMSIM convert "$gpt2" "$tmp/gpt2.msimtr" >/dev/null || fail "convert"
grid2="--grid max_split_size_mb=none,256 --cap 8GiB"
# shellcheck disable=SC2086
$MEMSIM sweep -q -j2 --db "$tmp/s2.db" $grid2 "$tmp/gpt2.msimtr" \
	"$tmp/partial.csv" || fail "sweep of bin and partial"
# shellcheck disable=SC2086
$MEMSIM sweep --list $grid2 "$tmp/gpt2.msimtr" "$tmp/partial.csv" >"$tmp/list2"
while read -r line; do
	f() { printf '%s\n' "$line" | cut -f"$1"; }
	$MEMSIM run --db "$tmp/one2.db" -p "$(f 2)" -c "$(f 3)" --cap "$(f 4)" \
		--addresses "$(f 5)" "$(f 1)" >/dev/null || fail "run $line"
done <"$tmp/list2"
rows "$tmp/s2.db" >"$tmp/a2"
rows "$tmp/one2.db" >"$tmp/b2"
[ "$(wc -l <"$tmp/a2")" -eq 4 ] || fail "sweep 2 stored $(wc -l <"$tmp/a2") rows"
cmp -s "$tmp/a2" "$tmp/b2" || { fail "sweep 2 differs from one by one"; diff "$tmp/a2" "$tmp/b2" | head; }

# 1c. A setting that fails is stored as failed with its reason (one line):
# report lists it; run again, the sweep retries it and says so, and it is
# stored once.  The other settings run and are stored.
printf '%s\n' seq,time_us,action,addr,size,stream 0,1,alloc,4096,1048576,0 \
	1,2,alloc,xyz,100,0 >"$tmp/bad.csv"
for j in 1 2; do
	out=$($MEMSIM sweep -j$j --db "$tmp/fail.db" --grid max_split_size_mb=none,64 \
		"$tmp/bad.csv" "$bert" 2>"$tmp/fail.err") && fail "a failed setting exited 0"
	if [ $j = 1 ]; then
		echo "$out" | grep -q ": 2 run, 0 already stored, 2 failed" || fail "failed sweep: $out"
		echo "$out" | grep -q "retried" && fail "first sweep retried: $out"
	else
		echo "$out" | grep -q ": 0 run, 2 already stored, 2 failed .*(2 retried" ||
			fail "resumed failed sweep: $out"
	fi
	[ "$(grep -c "bad.csv:3: addr 'xyz'" "$tmp/fail.err")" -eq 2 ] || fail "failed: $(cat "$tmp/fail.err")"
	$MEMSIM report --db "$tmp/fail.db" >"$tmp/fail.rep" || fail "report of failed"
	[ "$(grep -c "^sweep 1  bad.csv  pytorch  .*  failed: .*bad.csv:3: addr 'xyz' is not a whole number$" \
		"$tmp/fail.rep")" -eq 2 ] || { fail "report lacks the failed settings"; cat "$tmp/fail.rep"; }
	grep -q "^sweep 1  bad.csv  pytorch  (defaults)  failed" "$tmp/fail.rep" || fail "report: defaults"
	[ "$($MEMSIM report --csv --db "$tmp/fail.db" | tail -n +2 | wc -l)" -eq 2 ] || fail "failed: csv rows"
done
$MEMSIM report --sweep 1 --db "$tmp/fail.db" | grep -q "^sweep 1  bad.csv" || fail "report --sweep 1"
# merge copies them, once.
$MEMSIM merge "$tmp/fm.db" "$tmp/fail.db" "$tmp/fail.db" >/dev/null || fail "merge of failed"
[ "$($MEMSIM report --db "$tmp/fm.db" | grep -c "^sweep 1  bad.csv  pytorch  .*  failed: ")" -eq 2 ] ||
	fail "merge: the failed settings"

# Run again: nothing runs twice; --force runs everything again in place.
# shellcheck disable=SC2086
out=$($MEMSIM sweep -j2 --db "$tmp/sweep.db" $grid "$bert" "$resnet")
echo "$out" | grep -q ": 0 run, 30 already stored, 0 failed" || fail "rerun: $out"
# shellcheck disable=SC2086
$MEMSIM sweep -q -j1 --force --db "$tmp/sweep.db" $grid "$bert" "$resnet" || fail "--force"
rows "$tmp/sweep.db" >"$tmp/c"
cmp -s "$tmp/a" "$tmp/c" || fail "--force changed the results"
[ "$($MEMSIM report --csv --db "$tmp/sweep.db" | tail -n +2 | cut -d, -f1 | sort -n | tail -1)" = 30 ] ||
	fail "--force changed the run ids"

# 2. Killed with SIGKILL part-way, then resumed: every setting once.
big="--grid max_split_size_mb=none,64,128,256,512,1024 --grid garbage_collection_threshold=0,0.5,0.6,0.7,0.8,0.9 --grid roundup_power2_divisions=0,2,4"
# shellcheck disable=SC2086
$MEMSIM sweep -q -j2 --db "$tmp/kill.db" $big "$gpt2" &
pid=$!
sleep 1
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
sleep 0.3
n1=$($MEMSIM report --csv --db "$tmp/kill.db" | tail -n +2 | wc -l)
sleep 0.5
n2=$($MEMSIM report --csv --db "$tmp/kill.db" | tail -n +2 | wc -l)
[ "$n1" = "$n2" ] || fail "workers kept writing after the kill ($n1, then $n2)"
[ "$n1" -lt 108 ] || echo "note: the sweep finished before the kill ($n1 runs)"
# shellcheck disable=SC2086
out=$($MEMSIM sweep -j2 --db "$tmp/kill.db" $big "$gpt2") || fail "resume"
echo "$out" | grep -q ": $((108 - n1)) run, $n1 already stored, 0 failed" || fail "resume: $out (had $n1)"
$MEMSIM report --csv --db "$tmp/kill.db" | tail -n +2 | cut -d, -f2-7 | sort | uniq -d >"$tmp/dups"
[ -s "$tmp/dups" ] && fail "settings stored twice after resume"
[ "$($MEMSIM report --csv --db "$tmp/kill.db" | tail -n +2 | wc -l)" -eq 108 ] || fail "resume: not 108 runs"

# 3. Three shards merged equal the whole sweep, without duplicates.
for i in 1 2 3; do
	# shellcheck disable=SC2086
	$MEMSIM sweep -q -j1 --shard $i/3 --db "$tmp/shard$i.db" $grid "$bert" "$resnet" || fail "shard $i"
done
n=$(for i in 1 2 3; do $MEMSIM report --csv --db "$tmp/shard$i.db" | tail -n +2; done | wc -l)
[ "$n" -eq 30 ] || fail "shards hold $n runs, not 30"
$MEMSIM merge "$tmp/merged.db" "$tmp/shard1.db" "$tmp/shard2.db" "$tmp/shard3.db" >/dev/null || fail "merge"
out=$($MEMSIM merge "$tmp/merged.db" "$tmp/shard2.db")
echo "$out" | grep -q ": 0 runs added, 10 already there" || fail "merge again: $out"
rows "$tmp/merged.db" >"$tmp/m"
cmp -s "$tmp/a" "$tmp/m" || fail "merged shards differ from the sweep"

# 4. report --json has the keys of run --json.
$MEMSIM run --json --cap 2GiB "$bert" >"$tmp/run.json"
$MEMSIM report --json --db "$tmp/merged.db" >"$tmp/report.json" || fail "report --json"
for key in $(sed -n 's/^  "\([^"]*\)": .*/\1/p' "$tmp/run.json"); do
	grep -q "\"$key\": " "$tmp/report.json" || fail "report --json lacks $key"
done
[ "$(grep -c '"run_id": ' "$tmp/report.json")" -eq 30 ] || fail "report --json: not 30 objects"

# 5. Plots: PNGs of the asked size, SVGs with their series.
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{print $3*256+$4 "x" $7*256+$8}'; }
if command -v gnuplot >/dev/null 2>&1; then
	for kind in curve overlay sweep segments; do
		$MEMSIM plot --db "$tmp/merged.db" --kind $kind --size 640x480 \
			-o "$tmp/$kind.png" >/dev/null || fail "plot $kind png"
		[ "$(png_size "$tmp/$kind.png")" = 640x480 ] ||
			fail "$kind.png is $(png_size "$tmp/$kind.png")"
		$MEMSIM plot --db "$tmp/merged.db" --kind $kind -o "$tmp/$kind.svg" \
			>/dev/null || fail "plot $kind svg"
	done
	for s in reserved allocated fragmentation; do
		grep -q ">$s<" "$tmp/curve.svg" || fail "curve.svg lacks $s"
	done
	for s in "garbage_collection_threshold:0.6" "garbage_collection_threshold:0.8" \
		"resnet50_amp.csv garbage_collection_threshold:0"; do
		grep -q "$s" "$tmp/sweep.svg" || fail "sweep.svg lacks $s"
	done
	grep -q "max_split_size_mb:128 garbage_collection_threshold:0.6" "$tmp/overlay.svg" ||
		fail "overlay.svg lacks a run"
	grep -q "large pool segment" "$tmp/segments.svg" || fail "segments.svg"
	# The scripts also run by hand on exported data.
	$MEMSIM plot --db "$tmp/merged.db" --kind sweep --export "$tmp/sweep.csv" ||
		fail "--export"
	gnuplot -c "${MEMSIM_PLOTS_DIR:-plots}/sweep.gp" "$tmp/sweep.csv" "$tmp/hand.png" \
		"by hand" 2>/dev/null || fail "sweep.gp by hand"
	[ "$(png_size "$tmp/hand.png")" = 1200x700 ] || fail "hand.png size"
fi

# 6. tune stores the default and the recommendation.
$MEMSIM tune --db "$tmp/tune.db" -j2 --cap 1400MiB \
	--grid max_split_size_mb=none,128,256 --grid roundup_power2_divisions=0,4 \
	"$bert" >"$tmp/tune.out" || fail "tune"
grep -q 'export PYTORCH_CUDA_ALLOC_CONF="' "$tmp/tune.out" || fail "tune: no recommendation"
[ "$($MEMSIM report --csv --db "$tmp/tune.db" | tail -n +2 | wc -l)" -le 2 ] || fail "tune stored more than 2 runs"

# 7. Bad input: one line, non-zero status, the database unchanged.
cp "$tmp/merged.db" "$tmp/before.db"
expect_error() {
	pattern=$1; shift
	if "$@" >"$tmp/out" 2>"$tmp/err"; then fail "$* succeeded"; return; fi
	grep -q -- "$pattern" "$tmp/err" || fail "$*: '$(cat "$tmp/err")' lacks '$pattern'"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: $(wc -l <"$tmp/err") lines on stderr"
}
expect_error "frob: not a parameter of policy pytorch" \
	$MEMSIM sweep --db "$tmp/merged.db" --grid frob=1,2 "$bert"
expect_error "max_split_size_mb: 2 is below" \
	$MEMSIM sweep --db "$tmp/merged.db" --grid max_split_size_mb=2 "$bert"
expect_error "a range needs --random" \
	$MEMSIM sweep --db "$tmp/merged.db" --grid garbage_collection_threshold=0.5..0.9 "$bert"
expect_error "--shard: '4/3' is not I/N" $MEMSIM sweep --db "$tmp/merged.db" --shard 4/3 "$bert"
expect_error "not a database" $MEMSIM sweep --db "$bert" "$bert"
expect_error "not a database" $MEMSIM merge "$tmp/merged.db" "$bert"
expect_error "nope.db: No such file" $MEMSIM merge "$tmp/merged.db" "$tmp/nope.db"
expect_error "nope.db: No such file" $MEMSIM report --db "$tmp/nope.db"
expect_error "no run 999" $MEMSIM plot --db "$tmp/merged.db" --run 999 -o "$tmp/x.png"
expect_error "must end in .png" $MEMSIM plot --db "$tmp/merged.db" -o "$tmp/x.gif"
[ -e "$tmp/nope.db" ] && fail "report created a database"
cmp -s "$tmp/merged.db" "$tmp/before.db" || fail "the database changed on bad input"

# A random search is reproducible from its seed.
$MEMSIM sweep --list --random 8 --seed 7 --grid max_split_size_mb=none,64,128,256 \
	--grid garbage_collection_threshold=0.5..0.9 "$bert" >"$tmp/r1"
$MEMSIM sweep --list --random 8 --seed 7 --grid max_split_size_mb=none,64,128,256 \
	--grid garbage_collection_threshold=0.5..0.9 "$bert" >"$tmp/r2"
cmp -s "$tmp/r1" "$tmp/r2" && [ -s "$tmp/r1" ] || fail "random search not reproducible"

[ "$fails" -eq 0 ] && echo "sweep: all passed"
exit "$fails"
