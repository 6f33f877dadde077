#!/bin/sh
# The corpus (tests/corpus/programs.tsv): third-party programs, vendored
# unmodified, each recorded with `memsim record --fake` on synthetic data.
# Per program, tests/corpus/expected.tsv says either
#   ok     it records (exit 0, no signal, a trace memsim reads) and memsim
#          run's peak allocated and reserved are the figures given, or
#   fails  today's recorder cannot record it (the reason given): it must
#          still fail; once it records, this test fails and says so, so
#          that expected.tsv is brought up to date (tests/corpus/update-expected).
# A program whose Python modules (programs.tsv's NEEDS) are missing is
# skipped with a line saying which, listed again at the end; the test
# passes on the others (77, skipped, only when none can run here).
# CORPUS_JOBS programs are recorded at once (2).
# CORPUS_PROGRAMS="NAME..." checks only those programs (a quicker look
# after a recorder change; the full list is the test).
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
here=$(cd "${MSIM_TESTDATA:-tests/data}/.." && pwd)/corpus
tab=$(printf '\t')
MEMSIM=$(cd "$(dirname "$MEMSIM")" && pwd)/$(basename "$MEMSIM")
export MEMSIM PY

# Which programs can run here.
: >"$tmp/run"
grep -v '^#' "$here/programs.tsv" | while IFS=$tab read -r name data needs setup cmd; do
	missing=
	if [ "$needs" != - ]; then
		for m in $(echo "$needs" | tr , ' '); do
			"$PY" -c "import $m" 2>/dev/null || missing="$missing $m"
		done
	fi
	if [ -n "${CORPUS_PROGRAMS:-}" ] &&
		! echo " $CORPUS_PROGRAMS " | grep -q " $name "; then
		continue
	fi
	if [ -n "$missing" ]; then
		echo "SKIP $name: no Python module$missing" | tee -a "$tmp/skipped"
	else
		echo "$name" >>"$tmp/run"
	fi
done
[ -s "$tmp/run" ] || { echo "no corpus program can run here: skipped"; exit 77; }

# Every program listed once in expected.tsv, and no other.
grep -v '^#' "$here/programs.tsv" | cut -f1 | sort >"$tmp/names"
grep -v '^#' "$here/expected.tsv" | cut -f1 | sort >"$tmp/enames"
cmp -s "$tmp/names" "$tmp/enames" ||
	fail "expected.tsv and programs.tsv name different programs: $(diff "$tmp/names" "$tmp/enames" | grep '^[<>]' | tr '\n' ' ')"

xargs -P "${CORPUS_JOBS:-2}" -I{} sh "$here/run.sh" fake "$tmp/out" {} <"$tmp/run" >/dev/null

while read -r name; do
	line=$(grep "^$name$tab" "$here/expected.tsv")
	status=$(echo "$line" | cut -f2)
	ea=$(echo "$line" | cut -f3)
	er=$(echo "$line" | cut -f4)
	why=$(echo "$line" | cut -f5)
	rc=$(cat "$tmp/out/$name.rc" 2>/dev/null || echo none)
	got=
	if [ "$rc" = 0 ] && $MEMSIM run --json "$tmp/out/$name.csv" >"$tmp/$name.json" 2>"$tmp/$name.err"; then
		got="$(key allocated_bytes.all.peak "$tmp/$name.json") $(key reserved_bytes.all.peak "$tmp/$name.json")"
	fi
	case $status in
	ok)
		if [ "$rc" != 0 ]; then
			[ "$rc" = none ] || [ "$rc" -le 128 ] ||
				fail "$name: the recorder died with signal $((rc - 128))"
			fail "$name: memsim record exit $rc: $(sh "$here/reason.sh" "$tmp/out/$name.log")"
		elif [ -z "$got" ]; then
			fail "$name: memsim run cannot read the trace: $(head -1 "$tmp/$name.err")"
		elif [ "$got" != "$ea $er" ]; then
			fail "$name: peaks allocated, reserved $got, expected $ea $er"
		else
			echo "ok $name: $got"
		fi ;;
	fails)
		if [ -n "$got" ]; then
			fail "$name: listed as failing ($why) but records now (peaks $got): update tests/corpus/expected.tsv"
		else
			echo "expected failure $name: exit $rc: $(sh "$here/reason.sh" "$tmp/out/$name.log")"
		fi ;;
	*)
		fail "$name: status '$status' in expected.tsv is neither ok nor fails" ;;
	esac
done <"$tmp/run"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
if [ -s "$tmp/skipped" ]; then
	echo "corpus: $(wc -l <"$tmp/skipped") program(s) not checked here, their Python modules missing:"
	cat "$tmp/skipped"
fi
finish corpus
