#!/bin/sh
# Hostile use of the parts around the replay (issue 26): the results
# database (another program's SQLite file is refused before anything is
# written), the outputs of run, convert, plot, gen, merge and report (a
# bad target is one line before any work; a device, a FIFO or an input is
# never replaced), bounded work (--random N over a small grid, text files
# such as --calibration read with a size limit).  Every failure is one
# line and exits 1; no case hangs.  Run by `make check` with MEMSIM and
# MSIM_TESTDATA.
set -u
DATA=${MSIM_TESTDATA:-tests/data}
. "$DATA/../testlib.sh"
LIMIT=${MSIM_HOSTILE_TIMEOUT:-60}
T=$DATA/traces/gpt2_varlen.csv

# lim COMMAND...: COMMAND with a time limit; a hang or a signal fails.
lim() {
	timeout "$LIMIT" "$@"
	rc=$?
	[ "$rc" -eq 124 ] && fail "$*: hung (killed after ${LIMIT}s)"
	[ "$rc" -gt 125 ] && fail "$*: exit $rc (a signal)"
	return "$rc"
}
# same F SUM: file F still has cksum SUM.
same() { [ "$(cksum <"$1")" = "$2" ] || fail "$1 was changed"; }

# --- 1. The database belongs to memsim or is refused.
sqlite() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$@"; }
have_py=yes
python3 -c 'import sqlite3' 2>/dev/null || have_py=no
if [ "$have_py" = yes ]; then
	sqlite "$tmp/app.db" 'CREATE TABLE users(id INTEGER, name TEXT);
		INSERT INTO users VALUES(1, "ada");'
	sum=$(cksum <"$tmp/app.db")
	for cmd in "run --db $tmp/app.db $T" \
		   "sweep --db $tmp/app.db --policy bfc $T"; do
		expect_error "app.db: not a memsim database (it holds table 'users')" \
			lim $MEMSIM $cmd
		same "$tmp/app.db" "$sum"
		[ -e "$tmp/app.db-wal" ] && fail "$cmd: app.db switched to WAL"
	done
	# Another program's application_id, no tables.
	sqlite "$tmp/other.db" 'PRAGMA application_id=1234;'
	sum=$(cksum <"$tmp/other.db")
	expect_error "other.db: not a memsim database (SQLite application_id 0x000004d2)" \
		lim $MEMSIM run --db "$tmp/other.db" "$T"
	same "$tmp/other.db" "$sum"
	# Not SQLite at all: said, left as it was.
	printf 'hello\n' >"$tmp/text.db"
	expect_error "text.db: .*not a database" lim $MEMSIM run --db "$tmp/text.db" "$T"
	[ "$(cat "$tmp/text.db")" = hello ] || fail "text.db was changed"
	# An SQLite file that holds nothing, an empty file: memsim's now.
	sqlite "$tmp/blank.db" 'PRAGMA user_version=0;'
	: >"$tmp/empty.db"
	for f in blank empty; do
		lim $MEMSIM run --db "$tmp/$f.db" "$T" >/dev/null 2>"$tmp/err" ||
			fail "$f.db: $(cat "$tmp/err")"
		[ "$(sqlite3 "$tmp/$f.db" 'PRAGMA application_id' 2>/dev/null ||
		     python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA application_id").fetchone()[0])' "$tmp/$f.db")" = 1297303885 ] ||
			fail "$f.db: no memsim application_id"
	done
	# A memsim database of schema 7, made before the application_id (no
	# id; its tables say whose it is): opened, given the id, runs kept.
	lim $MEMSIM run --db "$tmp/old.db" "$T" >/dev/null
	sqlite "$tmp/old.db" 'PRAGMA application_id=0; PRAGMA user_version=0;'
	lim $MEMSIM run --db "$tmp/old.db" --policy bfc "$T" >/dev/null 2>"$tmp/err" ||
		fail "old memsim database refused: $(cat "$tmp/err")"
	n=$($MEMSIM report --db "$tmp/old.db" --csv 2>/dev/null | tail -n +2 | wc -l)
	[ "$n" -eq 2 ] || fail "old.db: $n runs, not 2"
fi

# --- 2. Bounded work.
# --random N over a grid of 449 settings: the grid, each once, with a
# note, at the cost of the grid (not of a billion draws).
timeout 20 $MEMSIM sweep --list --random 1000000000 \
	--grid max_split_size_mb=20..468 "$T" >"$tmp/list" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "--random 1000000000: exit $rc: $(head -c 300 "$tmp/err")"
[ "$(wc -l <"$tmp/list")" -eq 449 ] ||
	fail "--random 1000000000 over 449: $(wc -l <"$tmp/list") settings"
grep -q '^memsim sweep: --random 1000000000: the grid holds 449 settings, taking each once$' \
	"$tmp/err" || fail "--random over a small grid: no note: $(cat "$tmp/err")"
# A grid larger than N: N draws, as before (seeded: the same twice).
$MEMSIM sweep --list --random 5 --seed 3 --grid max_split_size_mb=20..468 \
	"$T" >"$tmp/l1" 2>"$tmp/err" || fail "--random 5: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "--random 5 over 449: a note: $(cat "$tmp/err")"
$MEMSIM sweep --list --random 5 --seed 3 --grid max_split_size_mb=20..468 \
	"$T" >"$tmp/l2" 2>/dev/null
[ "$(wc -l <"$tmp/l1")" -ge 4 ] && cmp -s "$tmp/l1" "$tmp/l2" ||
	fail "--random 5: $(wc -l <"$tmp/l1") settings, or not the same twice"
# Text files read with a size limit: /dev/zero, a binary, an endless FIFO.
expect_error "calibration: /dev/zero:1: a NUL byte: not a text file" \
	lim $MEMSIM run --calibration /dev/zero "$T"
expect_error "/dev/zero:1: a NUL byte" lim $MEMSIM sweep --list --settings /dev/zero "$T"
yes 'max_split_size_mb:128' | lim $MEMSIM sweep --list --settings /dev/stdin \
	"$T" >/dev/null 2>"$tmp/err"
grep -q '^memsim: /dev/stdin: larger than 16777216 bytes' "$tmp/err" ||
	fail "endless settings: $(head -c 300 "$tmp/err")"
expect_error "calibration: .*gpt2_varlen.csv: larger than 1048576 bytes" lim $MEMSIM run --calibration \
	"$T" "$DATA/traces/gpt2_varlen.csv"

# --- 3. Outputs: a bad target is one line before any work; a device, a
# FIFO, a link or an input is never replaced (sim/file.h
# msim_output_check(), msim_outfile_open()).
$MEMSIM run --db "$tmp/x.db" "$T" >/dev/null || fail "run --db x.db"
mkdir "$tmp/dir"
# out_cases NAME FUNCTION: FUNCTION OUT (a command writing OUT) with each
# bad target OUT, failing with one line that names NAME and the reason.
out_cases() {
	for bad in "" /nonexistent/x.out "$tmp/dir" "$tmp/dir/" "$T/x.out"; do
		case $bad in
		"") want="$1: an empty file name" ;;
		/nonexistent/*) want="$1: /nonexistent/x.out: folder /nonexistent: No such file" ;;
		*/) want="$1: $tmp/dir/: is a folder" ;;
		*/dir) want="$1: $tmp/dir: is a folder" ;;
		*) want="$1: $T/x.out: $T is not a folder" ;;
		esac
		expect_error "$want" "$2" "$bad"
	done
}
M() { timeout "$LIMIT" $MEMSIM "$@"; }
o_convert() { M convert "$T" "$1"; }
o_genr() { M gen random --requests 10 -o "$1"; }
o_genm() { M gen model --arch gpt2 --layers 1 --hidden 64 --heads 2 --vocab 100 \
	--positions 64 --batch 1 --seq 8 --dtype fp32 --steps 1 -o "$1"; }
o_segments() { M run --segments "$1" "$T"; }
o_runplot() { M run --db "$tmp/x.db" --plot "$1" "$T"; }
o_rundb() { M run --db "$1" "$T"; }
o_report() { M report --db "$tmp/x.db" --compare --plot "$1"; }
o_merge() { M merge "$1" "$tmp/x.db"; }
o_export() { M plot --db "$tmp/x.db" --export "$1"; }
out_cases OUT o_convert
out_cases -o o_genr
out_cases -o o_genm
out_cases --segments o_segments
out_cases --plot o_runplot
out_cases --db o_rundb
out_cases --plot o_report
out_cases OUT.db o_merge
out_cases --export o_export
# A folder where no file can be made: read-only for a user; for root,
# /sys (sysfs makes no files).
if [ "$(id -u)" -ne 0 ]; then
	mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
	expect_error "cannot write in folder $tmp/ro" \
		lim $MEMSIM gen random --requests 10 -o "$tmp/ro/x.csv"
	chmod 755 "$tmp/ro"
elif [ -d /sys ] && ! touch /sys/memsim-probe 2>/dev/null; then
	expect_error "cannot write in folder /sys" \
		lim $MEMSIM gen random --requests 10 -o /sys/x.csv
fi
# Before any work: a bad --segments is said before a long replay is run.
expect_error "segments: /nonexistent/s.csv" lim $MEMSIM run --segments \
	/nonexistent/s.csv "$T"
[ -s "$tmp/out" ] && fail "run --segments /nonexistent: replayed first"
# Inputs: each of several traces, the calibration file, a database
# spelt another way.
cp "$T" "$tmp/a.csv" && cp "$T" "$tmp/b.csv"
sum=$(cksum <"$tmp/b.csv")
expect_error "b.csv' is an input trace" lim $MEMSIM run --segments "$tmp/b.csv" \
	"$tmp/a.csv" "$tmp/b.csv"
expect_error "b.csv' is an input trace" lim $MEMSIM run --db "$tmp/b.csv" \
	"$tmp/a.csv" "$tmp/b.csv"
same "$tmp/b.csv" "$sum"
cp "$DATA/cuda_latency_h200.csv" "$tmp/cal.csv"
sum=$(cksum <"$tmp/cal.csv")
expect_error "is the calibration file" lim $MEMSIM run --db "$tmp/cal.csv" \
	--calibration "$tmp/cal.csv" "$T"
same "$tmp/cal.csv" "$sum"
sum=$(cksum <"$tmp/x.db")
(cd "$tmp" && expect_error "cannot merge a database into itself" \
	lim $MEMSIM merge x.db ./x.db)
same "$tmp/x.db" "$sum"
# A FIFO is written in place, not replaced by a file.
mkfifo "$tmp/fifo" 2>/dev/null && {
	cat "$tmp/fifo" >"$tmp/fifo.out" &
	lim $MEMSIM gen random --requests 10 -o "$tmp/fifo" 2>/dev/null ||
		fail "gen -o FIFO failed"
	wait
	[ -p "$tmp/fifo" ] || fail "the FIFO was replaced"
	[ "$(head -n 1 "$tmp/fifo.out")" = 'seq,time_us,action,addr,size,stream' ] ||
		fail "nothing came through the FIFO"
}
# A link to a file: the file gets the output, the link stays.
: >"$tmp/real.csv"
ln -s real.csv "$tmp/link.csv"
lim $MEMSIM gen random --requests 10 -o "$tmp/link.csv" 2>/dev/null || fail "gen -o link"
[ -L "$tmp/link.csv" ] || fail "the link was replaced by a file"
[ -s "$tmp/real.csv" ] || fail "the link's file was not written"
# /dev/null as an output (as root, a rename would replace the device).
lim $MEMSIM gen random --requests 10 -o /dev/null 2>/dev/null || fail "gen -o /dev/null"
[ -c /dev/null ] || fail "/dev/null is no longer a device"

finish hostile_lib
