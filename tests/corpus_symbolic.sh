#!/bin/sh
# Issue 29's check of symbolic recordings on the corpus
# (docs/symbolic-sizes.md, "On the corpus"): each program below recorded
# once with its batch size symbolic, its trace instantiated in C at five
# values across powers of two of B, each compared byte for byte with the
# program recorded at that value (tests/corpus/symbolic.sh; "order": the
# same rows in another order, where the program's own recordings differ
# so).  The result and the range it holds for must be the table's: a
# kernel rule that bounds the range again (the reduction's powers of two
# did, 6..7 before they were evaluated per value) or an instantiation
# that differs fails.  CORPUS_PROGRAMS="NAME..." checks only those.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
here=$(cd "${MSIM_TESTDATA:-tests/data}/.." && pwd)/corpus
MEMSIM=$(cd "$(dirname "$MEMSIM")" && pwd)/$(basename "$MEMSIM")
export MEMSIM PY
n=0
# NAME OPTION V VALUES... | RESULT LO..HI
while IFS='|' read -r spec want; do
	# shellcheck disable=SC2086
	set -- $spec
	name=$1
	if [ -n "${CORPUS_PROGRAMS:-}" ] &&
		! echo " $CORPUS_PROGRAMS " | grep -q " $name "; then
		continue
	fi
	n=$((n + 1))
	sh "$here/symbolic.sh" "$tmp/out" "$spec" </dev/null >/dev/null 2>&1
	line=$(grep "^$name	" "$tmp/out/symbolic.tsv" | tail -1)
	# shellcheck disable=SC2086
	set -- $want
	res=$(echo "$line" | cut -f2)
	range=$(echo "$line" | cut -f3 | sed -n 's/^holds for B=\([0-9.]*\);.*/\1/p')
	[ "$res" = "$1" ] && [ "$range" = "$2" ] ||
		fail "$name: $res ${range:-}, not $1 $2: $(echo "$line" | cut -f3 | cut -c1-200)"
done <<'LIST'
makemore-transformer --batch-size_ 7 3 5 12 24 48|exact 2..23
makemore-rnn --batch-size_ 7 3 5 12 24 48|exact 2..93
mingpt-chargpt --trainer.batch_size= 7 3 5 12 24 48|short 5..8
nanogpt-train --batch_size= 7 3 5 12 24 48|exact 3..8
llama2c-train --batch_size= 7 3 5 12 24 48|exact 3..8
LIST
[ "$n" -gt 0 ] || { echo "no program of CORPUS_PROGRAMS is checked here"; exit 77; }
finish corpus_symbolic
