#!/bin/sh
# Corpus programs against their real H200 runs, request by request: for
# each tests/data/corpus/NAME_h200.pickle (the allocator's history of the
# real run, made by tests/corpus/device.sh with CORPUS_SNAPSHOTS=1, see
# docs/corpus.md), the snapshot replays to the program's figures in
# tests/corpus/real_h200.tsv, and `memsim record --fake` of the program
# makes the same large-pool requests (over 1 MiB), sizes and order of
# allocs and frees alike (tests/corpus/snapdiff.py --min 1048577); the
# small pool's requests may differ.  Needs PyTorch; a program whose Python
# modules (programs.tsv's NEEDS) are missing is skipped.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
data=${MSIM_TESTDATA:-tests/data}/corpus
here=$(cd "${MSIM_TESTDATA:-tests/data}/.." && pwd)/corpus
tab=$(printf '\t')
MEMSIM=$(cd "$(dirname "$MEMSIM")" && pwd)/$(basename "$MEMSIM")
export MEMSIM PY
ran=0
for snap in "$data"/*_h200.pickle; do
	name=$(basename "$snap" _h200.pickle)
	line=$(grep "^$name$tab" "$here/real_h200.tsv") ||
		{ fail "$name: not in real_h200.tsv"; continue; }
	$MEMSIM run --json "$snap" >"$tmp/$name.json" ||
		{ fail "$name: memsim run of the snapshot"; continue; }
	got="$(key allocated_bytes.all.peak "$tmp/$name.json") $(key reserved_bytes.all.peak "$tmp/$name.json")"
	want="$(echo "$line" | cut -f3) $(echo "$line" | cut -f4)"
	[ "$got" = "$want" ] || fail "$name: the snapshot replays to $got, real_h200.tsv says $want"
	needs=$(grep "^$name$tab" "$here/programs.tsv" | cut -f3)
	missing=
	for m in $(echo "$needs" | tr , ' '); do
		[ "$m" = - ] || "$PY" -c "import $m" 2>/dev/null || missing="$missing $m"
	done
	if [ -n "$missing" ]; then
		echo "SKIP $name: no Python module$missing"
		continue
	fi
	sh "$here/run.sh" fake "$tmp/out" "$name" >/dev/null
	[ "$(cat "$tmp/out/$name.rc")" = 0 ] ||
		{ fail "$name: memsim record: $(sh "$here/reason.sh" "$tmp/out/$name.log")"; continue; }
	"$PY" "$here/snapdiff.py" --min 1048577 "$snap" "$tmp/out/$name.csv" \
		>"$tmp/$name.diff" 2>&1 ||
		fail "$name: the recording's large requests differ from the real run's: $(head -30 "$tmp/$name.diff")"
	ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || [ "$fails" -gt 0 ] || { echo "no snapshot's program can run here: skipped"; exit 77; }
finish corpus_snapshots.sh
