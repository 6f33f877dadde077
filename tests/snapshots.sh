#!/bin/sh
# The snapshot and RMM log corpus (tests/data/snapshots): each file's
# expected figures (expected.tsv, from make_corpus.py's histories; h200.tsv,
# from the device) against `memsim info|run --json`.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}/snapshots
tmp=$(mktemp -d /tmp/memsim-snap-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
n=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for tsv in "$DATA/expected.tsv" "$DATA/h200.tsv"; do
	while IFS='	' read -r file cmd key value; do
		case $file in '#'*|'') continue ;; esac
		n=$((n + 1))
		out=$tmp/$(printf '%s %s' "$file" "$cmd" | tr ' /-' '___').out
		if [ ! -e "$out" ]; then
			# shellcheck disable=SC2086
			$MEMSIM $cmd --json "$DATA/$file" >"$out" 2>"$out.err"
			echo $? >"$out.rc"
		fi
		if [ "$key" = error ]; then
			[ "$(cat "$out.rc")" != 0 ] ||
				fail "$file: memsim $cmd should fail"
			grep -qF -- "$value" "$out.err" ||
				fail "$file: memsim $cmd: no '$value' in: $(cat "$out.err")"
			continue
		fi
		[ "$(cat "$out.rc")" = 0 ] ||
			{ fail "$file: memsim $cmd: $(cat "$out.err")"; continue; }
		grep -qF -- "\"$key\": $value" "$out" ||
			fail "$file: memsim $cmd: $key is $(grep -F "\"$key\":" "$out" || echo absent), expected $value"
	done <"$tsv"
done

# --device all replays each device with trace events.
$MEMSIM run --recording --device all "$DATA/r2_3_twodev.pickle" >"$tmp/all" ||
	fail "--device all"
[ "$(grep -c '^snapshot state: matches' "$tmp/all")" = 2 ] ||
	fail "--device all: $(cat "$tmp/all")"
grep -q '^device     1$' "$tmp/all" || fail "--device all names device 1"
# Each device of one file is its own setting: stored apart, and the same
# device again replaces its own row.
$MEMSIM run --recording --device all --db "$tmp/dev.db" \
	"$DATA/r2_3_twodev.pickle" >"$tmp/dev.out" || fail "--device all --db"
[ "$(grep -c '^stored     run' "$tmp/dev.out")" = 2 ] &&
	[ "$(grep '^stored     run' "$tmp/dev.out" | sort -u | wc -l)" = 2 ] ||
	fail "--device all --db: one row per device: $(cat "$tmp/dev.out")"
$MEMSIM run --recording --device 1 --db "$tmp/dev.db" \
	"$DATA/r2_3_twodev.pickle" | grep -q '^stored     run 2 in' ||
	fail "--device 1 again: not its own row"
$MEMSIM run --recording --device 0 --db "$tmp/dev.db" \
	"$DATA/r2_3_twodev.pickle" | grep -q '^stored     run 1 in' ||
	fail "--device 0 again: not its own row"
# A snapshot replays as it ran, and says so: its own settings, and the
# device its oom record implies (84 MiB reserved + 90 MiB free).
$MEMSIM run "$DATA/r2_13_oom.pickle" >"$tmp/asran" || fail "run r2_13_oom"
grep -q '^settings   the snapshot.s own "max_split_size_mb:64" (-c overrides, --defaults drops them)$' "$tmp/asran" ||
	fail "no line for the snapshot's settings: $(cat "$tmp/asran")"
grep -q '^capacity   174.00 MiB from the snapshot.s oom record: 84.00 MiB reserved + 90.00 MiB free when 100.00 MiB did not fit' "$tmp/asran" ||
	fail "no line for the oom record's capacity"
grep -q '^recorded OOMs  1 reproduced, 0 not$' "$tmp/asran" ||
	fail "the recorded OOM is not reproduced"
$MEMSIM run --defaults "$DATA/r2_13_oom.pickle" >"$tmp/asdef" ||
	fail "run --defaults"
grep -q '^recorded OOMs  0 reproduced, 1 not$' "$tmp/asdef" ||
	fail "--defaults: the H200 should hold the 100 MiB"
grep -q '^capacity ' "$tmp/asdef" && fail "--defaults: still the oom's capacity"
# The device's own expandable snapshot (h200.tsv): its peak reserved as
# the device had it, with its expandable_segments:True, by default.
$MEMSIM run --json "$DATA/h200_expandable.pickle" |
	grep -q '"reserved_bytes.all.peak": 1218445312,' ||
	fail "h200_expandable: not replayed with its own settings"
$MEMSIM run --defaults --json "$DATA/h200_expandable.pickle" |
	grep -q '"params": "",' || fail "h200_expandable --defaults"
# An explicit --alloc-conf wins over the snapshot's settings, with a note.
$MEMSIM run --recording -c max_split_size_mb:32 "$DATA/r2_8_conf.pickle" |
	grep -q '^settings   --alloc-conf given: the snapshot.s settings "max_split_size_mb:64" are not applied' ||
	fail "--alloc-conf over allocator_settings"
# info says when a snapshot has no trace events, and what is not known.
$MEMSIM info "$DATA/r2_3_nohistory.pickle" |
	grep -q 'was torch.cuda.memory._record_memory_history() enabled' ||
	fail "no-history hint"
$MEMSIM info "$DATA/r2_0_full.pickle" | grep -q '^duration   unknown' ||
	fail "2.0 duration unknown"
# A format without a snapshot state has no first pass: blocks are seeded
# where their free is met, and it says so (the CSV without the seeded start
# convert writes before its reset_peaks row).
$MEMSIM convert "$DATA/r2_3_late.pickle" "$tmp/seeded.csv" >/dev/null ||
	fail "convert"
awk 'NR == 1 || rest; /,reset_peaks,/ { rest = 1 }' "$tmp/seeded.csv" >"$tmp/late.csv"
$MEMSIM info "$tmp/late.csv" >"$tmp/late.info" || fail "info of late.csv"
grep -q '^start      not exact: without a first pass' "$tmp/late.info" ||
	fail "late seeding of a csv: $(cat "$tmp/late.info")"
grep -q '^seeded     2 blocks' "$tmp/late.info" ||
	fail "late seeding of a csv: $(cat "$tmp/late.info")"

# The seeding is stored with the run.
$MEMSIM run --recording --db "$tmp/s.db" "$DATA/r2_3_late.pickle" >/dev/null ||
	fail "run --db of a partial history"
$MEMSIM report --json --db "$tmp/s.db" >"$tmp/s.json" 2>&1
grep -q '3 blocks, 2 segments of 23068672 bytes; exact' "$tmp/s.json" ||
	fail "seeded not stored: $(cat "$tmp/s.json")"

# Unknown actions in the text formats: named, or skipped with --lenient.
printf 'action,addr,size\nalloc,4096,100\nworkspace_snapshot,8192,4\nfree_completed,4096,100\n' >"$tmp/ws.csv"
$MEMSIM info "$tmp/ws.csv" 2>"$tmp/ws.err" && fail "unknown csv action accepted"
grep -q "ws.csv:3: unknown action 'workspace_snapshot'" "$tmp/ws.err" ||
	fail "csv unknown action: $(cat "$tmp/ws.err")"
$MEMSIM info --lenient "$tmp/ws.csv" | grep -q "^skipped    1 entry of unknown actions (first 'workspace_snapshot')" ||
	fail "csv --lenient"
printf 'Thread,Time,Action,Pointer,Size,Stream\n1,1.0,reallocate,0x10,4,0\n' >"$tmp/r.rmm"
$MEMSIM info --json --lenient "$tmp/r.rmm" | grep -q '"skipped_entries": 1' ||
	fail "rmm --lenient"

echo "snapshots: $n figures checked, $fails failed"
[ "$fails" = 0 ]
