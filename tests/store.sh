#!/bin/sh
# The results store from the command line: commands that only read leave
# the file as it was (and work on a read-only one), a missing folder is
# named, a storage error (a full disk) comes after the figures, and no code
# but sim/results.c speaks SQL.  Run by `make check` with MEMSIM and
# MSIM_TESTDATA.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
tmp=$(mktemp -d /tmp/memsim-store-XXXXXX)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
trace=$DATA/traces/gpt2_fp32.csv

# one_line FILE WHAT: FILE holds exactly one line.
one_line() {
	[ "$(wc -l <"$1")" -eq 1 ] || fail "$2: not one line: '$(cat "$1")'"
}

# 1. Reading commands change nothing: measured.db is a schema 1 file, which
# a writer would migrate to the current schema.
mkdir "$tmp/ro"
cp "$DATA/validate/measured.db" "$tmp/ro/m.db"
chmod 444 "$tmp/ro/m.db"
cp "$tmp/ro/m.db" "$tmp/pristine.db"
for args in "" "--json" "--csv" "--run 3" "--sweep 1"; do
	# shellcheck disable=SC2086
	$MEMSIM report --db "$tmp/ro/m.db" $args >"$tmp/out" 2>"$tmp/err" ||
		fail "report $args on a read-only file: $(cat "$tmp/err")"
done
$MEMSIM report --db "$tmp/ro/m.db" --json >"$tmp/out" || fail "report --json"
[ "$(grep -c '"run_id"' "$tmp/out")" -eq 46 ] || fail "report --json: not 46 runs"
grep -q '"setting_key": null' "$tmp/out" || fail "schema 1 runs have no key"
(cd "$DATA/../.." && $MEMSIM report --db "$tmp/ro/m.db" --compare) \
	>"$tmp/out" 2>"$tmp/err" || fail "report --compare: $(cat "$tmp/err")"
grep -q "reproduced exactly" "$tmp/out" || fail "report --compare output"
cmp -s "$tmp/ro/m.db" "$tmp/pristine.db" || fail "reading changed the file"
# plot reads runs of memsim run and sweep.
$MEMSIM run --db "$tmp/ro/s.db" "$trace" >/dev/null || fail "run --db"
$MEMSIM sweep --db "$tmp/ro/s.db" -g max_split_size_mb=none,128 "$trace" \
	>/dev/null || fail "sweep --db"
chmod 444 "$tmp/ro/s.db"
cp "$tmp/ro/s.db" "$tmp/s0.db"
for kind in curve overlay sweep segments; do
	$MEMSIM plot --db "$tmp/ro/s.db" --kind $kind --export "$tmp/$kind.csv" \
		>/dev/null 2>"$tmp/err" || fail "plot --kind $kind: $(cat "$tmp/err")"
done
grep -q '^request,run 1 ' "$tmp/overlay.csv" || fail "plot overlay data"
[ "$(grep -c '^request,time_ns' "$tmp/curve.csv")" = 1 ] || fail "plot curve data"
cmp -s "$tmp/ro/s.db" "$tmp/s0.db" || fail "plot changed the file"
# A read-only folder too, where SQLite cannot make its -shm file (only a
# user without root's rights sees the difference).
chmod 555 "$tmp/ro"
$MEMSIM report --db "$tmp/ro/m.db" >/dev/null 2>"$tmp/err" ||
	fail "report in a read-only folder: $(cat "$tmp/err")"
$MEMSIM report --db "$tmp/ro/m.db" --run 99 >/dev/null 2>"$tmp/err" &&
	fail "report --run 99 succeeded"
grep -q "m.db: no run 99" "$tmp/err" || fail "no run 99: $(cat "$tmp/err")"
chmod 755 "$tmp/ro"
# merge reads its sources read-only too.
$MEMSIM merge -q "$tmp/merged.db" "$tmp/ro/m.db" "$tmp/ro/s.db" ||
	fail "merge of read-only files"
n=$(sqlite3 "$tmp/ro/s.db" "SELECT 46 + count(*) FROM runs")
[ "$(sqlite3 "$tmp/merged.db" "SELECT count(*) FROM runs")" = "$n" ] ||
	fail "merge of read-only files: not $n runs"
cmp -s "$tmp/ro/m.db" "$tmp/pristine.db" || fail "merge changed a source"
# Without root's rights (as nobody, where root can switch), a read-only
# folder holds no -shm file and SQLite cannot make one.
as=
if [ "$(id -u)" = 0 ]; then
	as="setpriv --reuid=65534 --regid=65534 --clear-groups"
	command -v setpriv >/dev/null && chmod 755 "$tmp" || as=skip
fi
if [ "$as" != skip ] && $as $MEMSIM --help >/dev/null 2>&1; then
	mkdir "$tmp/w"
	chmod 777 "$tmp/w"
	rm -f "$tmp/ro/"*-shm "$tmp/ro/"*-wal
	chmod 555 "$tmp/ro"
	$as $MEMSIM report --db "$tmp/ro/m.db" >/dev/null 2>"$tmp/err" ||
		fail "report, read-only folder: $(cat "$tmp/err")"
	$as $MEMSIM plot --db "$tmp/ro/s.db" --kind overlay \
		--export "$tmp/w/o.csv" >/dev/null 2>"$tmp/err" ||
		fail "plot, read-only folder: $(cat "$tmp/err")"
	$as $MEMSIM merge -q "$tmp/w/m.db" "$tmp/ro/s.db" 2>"$tmp/err" ||
		fail "merge, read-only folder: $(cat "$tmp/err")"
	cmp -s "$tmp/ro/m.db" "$tmp/pristine.db" || fail "nobody changed m.db"
	chmod 755 "$tmp/ro"
fi
# A file that is not a memsim database, and one that is not there.
echo "trace,policy" >"$tmp/not.db"
$MEMSIM report --db "$tmp/not.db" >/dev/null 2>"$tmp/err" &&
	fail "report of a CSV file succeeded"
one_line "$tmp/err" "report of a CSV file"
grep -q "not.db" "$tmp/err" || fail "not.db unnamed: $(cat "$tmp/err")"
$MEMSIM sweep --quiet --jobs 2 --force --db "$tmp/not.db" \
	--grid expandable_segments=true,false "$trace" 2>"$tmp/err" &&
	fail "sweep into a CSV file succeeded"
one_line "$tmp/err" "sweep into a CSV file"
grep -q "not.db" "$tmp/err" || fail "sweep: not.db unnamed: $(cat "$tmp/err")"
[ "$(cat "$tmp/not.db")" = "trace,policy" ] || fail "sweep changed not.db"
$MEMSIM report --db "$tmp/none.db" >/dev/null 2>"$tmp/err" &&
	fail "report of a missing file succeeded"
grep -q "none.db: No such file" "$tmp/err" || fail "missing: $(cat "$tmp/err")"
[ -e "$tmp/none.db" ] && fail "report created none.db"

# 2. A database in a folder that is not there: the folder is named.
# A sweep's workers start before it makes a new database: they stop.
for cmd in "run --db $tmp/no/such/x.db $trace" \
	"sweep --quiet --jobs 2 --db $tmp/no/such/x.db --grid expandable_segments=true,false $trace" \
	"merge $tmp/no/such/x.db $tmp/pristine.db"; do
	# shellcheck disable=SC2086
	$MEMSIM $cmd >/dev/null 2>"$tmp/err" && fail "$cmd succeeded"
	one_line "$tmp/err" "$cmd"
	grep -q "x.db: .*folder $tmp/no/such: No such file" \
		"$tmp/err" || fail "$cmd: $(cat "$tmp/err")"
done
touch "$tmp/file"
$MEMSIM run --db "$tmp/file/x.db" "$trace" >/dev/null 2>"$tmp/err" &&
	fail "a database under a file succeeded"
grep -q "$tmp/file is not a folder" "$tmp/err" || fail "under a file: $(cat "$tmp/err")"

# 3. A storage error after the replay: the figures first, then one line.
$MEMSIM run -c max_split_size_mb:128 "$trace" >"$tmp/figures" || fail "run"
$MEMSIM run --db "$tmp/full.db" "$trace" >/dev/null || fail "run --db"
cp "$tmp/full.db" "$tmp/full0.db"
# A full disk: files may not grow past 64 blocks (SIGXFSZ ignored, so a
# write fails with EFBIG), enough for SQLite's -shm but not for the run.
sh -c 'trap "" XFSZ; ulimit -f 64 && exec "$@"' sh \
	$MEMSIM run --db "$tmp/full.db" -c max_split_size_mb:128 "$trace" \
	>"$tmp/out" 2>"$tmp/err" && fail "run --db on a full disk succeeded"
one_line "$tmp/err" "run --db on a full disk"
grep -q "full.db: .*error" "$tmp/err" || fail "full disk: $(cat "$tmp/err")"
cmp -s "$tmp/figures" "$tmp/out" || fail "full disk: the figures are not printed"
[ "$(sqlite3 "$tmp/full.db" "SELECT count(*) FROM runs")" = 1 ] ||
	fail "full disk: the database lost or gained a run"
# Any storage error: a database that refuses new runs.
sqlite3 "$tmp/full0.db" "CREATE TRIGGER full BEFORE INSERT ON runs BEGIN
	SELECT RAISE(FAIL, 'database or disk is full'); END;"
cp "$tmp/full0.db" "$tmp/full1.db"
$MEMSIM run --db "$tmp/full0.db" -c max_split_size_mb:128 "$trace" \
	>"$tmp/out" 2>"$tmp/err" && fail "run --db, refused, succeeded"
one_line "$tmp/err" "run --db, refused"
grep -q "full0.db: cannot store the run: database or disk is full" \
	"$tmp/err" || fail "refused: $(cat "$tmp/err")"
cmp -s "$tmp/figures" "$tmp/out" || fail "refused: the figures are not printed"
# tune: the search's default and recommendation, then the error.
$MEMSIM tune --cap 15GiB -j1 -g max_split_size_mb=none,64,128 \
	-g garbage_collection_threshold=0 -g roundup_power2_divisions=0 \
	-g expandable_segments=false --db "$tmp/full1.db" "$trace" >"$tmp/out" 2>"$tmp/err" &&
	fail "tune into a refusing database succeeded"
one_line "$tmp/err" "tune, refused"
grep -q "full1.db: cannot store the run: database or disk is full" \
	"$tmp/err" || fail "tune refused: $(cat "$tmp/err")"
grep -q '^searched   3 settings of pytorch' "$tmp/out" &&
	grep -q '^peak reserved ' "$tmp/out" &&
	grep -q '^export PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:' "$tmp/out" ||
	fail "tune refused: the figures are not printed: $(cat "$tmp/out")"
grep -q '^run (in the database)' "$tmp/out" && fail "tune refused: run ids"
grep -q '^stored' "$tmp/out" && fail "tune refused: 'stored'"
# The same search stored: the same figures, with the runs.
$MEMSIM tune --cap 15GiB -j1 -g max_split_size_mb=none,64,128 \
	-g garbage_collection_threshold=0 -g roundup_power2_divisions=0 \
	-g expandable_segments=false --db "$tmp/tune.db" "$trace" >"$tmp/out2" || fail "tune"
grep -v '^run (in\|^stored\|^searched' "$tmp/out2" >"$tmp/a"
grep -v '^searched' "$tmp/out" | cmp -s - "$tmp/a" ||
	fail "tune refused printed other figures than tune stored"

# 4. Only sim/results.c speaks SQL: tests/layers.sh fails on a tree with a
# query anywhere else.
top=$(cd "$(dirname "$0")/.." && pwd)
for d in sim policies traces plots validate lab lib cli; do
	mkdir -p "$tmp/tree/$d"
done
printf '#include "sim/results.h"\nstatic int f(void) { return 0; }\n' \
	>"$tmp/tree/cli/cmd_x.c"
srcdir="$tmp/tree" sh "$top/tests/layers.sh" >"$tmp/out" ||
	fail "layers.sh fails a clean tree: $(cat "$tmp/out")"
printf '#include <sqlite3.h>\nint g(sqlite3 *db) { return sqlite3_changes(db); }\n' \
	>"$tmp/tree/plots/q.c"
srcdir="$tmp/tree" sh "$top/tests/layers.sh" >"$tmp/out" &&
	fail "layers.sh passes SQL in plots/"
[ "$(grep -c 'plots/q.c:.*SQL outside sim/results.c' "$tmp/out")" -eq 2 ] ||
	fail "layers.sh: $(cat "$tmp/out")"

[ $fails -eq 0 ] && echo "store: all passed"
exit $((fails > 0))
