#!/bin/sh
# The generator against recordings of the PyTorch programs it models:
# every trace in tests/data/recorded (NAME.msimtr: `memsim record --fake`
# of tests/scripts/NAME.py, with --amp bf16 for NAME_bf16amp, converted to
# the binary format) and its model spec (specs.tsv: NAME, spec) replay
# through the pytorch policy to peaks allocated within 2% of each other.
# Prints both.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
fails=0 n=0
peak() {
	$MEMSIM run --json "$1" |
		sed -n 's/.*"allocated_bytes\.all\.peak": \([0-9]*\).*/\1/p'
}
while IFS='	' read -r name spec; do
	case $name in ''|'#'*) continue ;; esac
	n=$((n + 1))
	rec=$(peak "$DATA/recorded/$name.msimtr")
	gen=$(peak "$spec")
	if [ -z "$rec" ] || [ -z "$gen" ]; then
		echo "FAIL: $name: no peak (recorded '$rec', generated '$gen')"
		fails=$((fails + 1))
		continue
	fi
	# |gen - rec| <= 2% of rec, in integers
	d=$((gen - rec)); [ "$d" -lt 0 ] && d=$((-d))
	echo "$name: generated $gen recorded $rec"
	if [ $((d * 50)) -gt "$rec" ]; then
		echo "FAIL: $name: generated $gen is not within 2% of $rec"
		fails=$((fails + 1))
	fi
done <"$DATA/recorded/specs.tsv"
[ "$n" -ge 8 ] || { echo "FAIL: only $n recordings"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ]
