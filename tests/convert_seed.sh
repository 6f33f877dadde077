#!/bin/sh
# memsim convert carries a partial history's seeded start (the blocks and
# segments live before the history began, then reset_peak_memory_stats)
# into csv and bin, so the output replays as the snapshot does; the
# formats that cannot hold it (rmm, pickle) refuse in one line, and so
# does --repeat.  Snapshots recorded on the H200 (tests/data/snapshots).
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
DATA=${MSIM_TESTDATA:-tests/data}

# figures FILE: requests, peak allocated, peak reserved, OOM request.
figures() {
	$MEMSIM run --defaults --json "$1" >"$tmp/f.json" || { echo failed; return; }
	echo "$(key requests "$tmp/f.json") $(key allocated_bytes.all.peak "$tmp/f.json")" \
		"$(key reserved_bytes.all.peak "$tmp/f.json")" \
		"$(sed -n 's/.*"oom_request": \(-*[0-9]*\).*/\1/p' "$tmp/f.json")"
}

# h200_late: the history began after 27 blocks were live; without its
# start a conversion replayed 188 requests to 1147142144 reserved.
for w in h200_late:"279 1158804992 1247805440 -1" \
	h200_wrapped:"235 1158804992 1281359872 -1" \
	r2_3_late:"14 6292992 23068672 -1" r2_6_wrapped:"10 6292992 23068672 -1"; do
	name=${w%%:*} want=${w#*:}
	snap=$DATA/snapshots/$name.pickle
	[ "$(figures "$snap")" = "$want" ] || fail "$name: $(figures "$snap")"
	for ext in csv bin; do
		$MEMSIM convert "$snap" "$tmp/$name.$ext" >/dev/null ||
			fail "$name: convert to $ext"
		got=$(figures "$tmp/$name.$ext")
		[ "$got" = "$want" ] || fail "$name.$ext replays $got, the snapshot $want"
	done
done
grep -c '^[0-9]*,[0-9]*,reset_peaks,0,0,' "$tmp/h200_late.csv" | grep -qx 1 ||
	fail "h200_late.csv: not one reset_peaks row"
# A complete history converts as before: no rows added.
$MEMSIM convert "$DATA/snapshots/r2_3_full.pickle" "$tmp/full.csv" >/dev/null ||
	fail "convert r2_3_full"
grep -q reset_peaks "$tmp/full.csv" && fail "r2_3_full: a seeded start written"

snap=$DATA/snapshots/h200_late.pickle
expect_error "the rmm format cannot hold the seeded start of $snap's partial history (27 blocks allocated before its history began); convert to csv or bin" \
	$MEMSIM convert "$snap" "$tmp/x.rmm.csv"
[ ! -e "$tmp/x.rmm.csv" ] || fail "rmm: a file was left"
expect_error "the pickle format cannot hold the seeded start" \
	$MEMSIM convert "$snap" "$tmp/x.pickle"
expect_error "--repeat: $snap is a partial history; its seeded start is written once (--repeat 1)" \
	$MEMSIM convert --repeat 2 "$snap" "$tmp/x.csv"
finish convert_seed
