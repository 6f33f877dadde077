#!/bin/sh
# Issue 29's check of symbolic recordings on the corpus
# (docs/symbolic-sizes.md): a program with a batch (or sequence) option
# is recorded once with that size symbolic (memsim record --symbolic
# B=V), the trace instantiated in C (memsim convert --at) at five values,
# and each compared byte for byte with the program recorded at that
# value (tests/corpus/run.sh, CORPUS_SED setting the option).
#
#   sh tests/corpus/symbolic.sh OUTDIR 'NAME OPTION V v1 v2 v3 v4 v5' ...
#
# OPTION is the option as programs.tsv spells it before its number,
# "--batch_size=" or "--batch_size_" (a final underscore for a space).  An
# OPTION that is not in the program's command is "failed": the sizes
# would not change, and every value would compare equal.  The
# values checked are those given that lie in the range the trace holds
# for, completed to five from the range (its ends up to 64 and their
# neighbours).  One
# line a program in OUTDIR/symbolic.tsv: NAME, then "exact" (all five
# equal; the range the trace holds for), "short" (all equal, but the
# range holds fewer than five values besides V), "order" (equal but for the
# order of rows, where the program's own recordings at one value differ
# so from run to run), "refused" (the recorder's line),
# "outside" (a value outside the range), "differs" (the first value that
# differs: a bug) or "failed".  Needs $MEMSIM and $PY as run.sh does.
set -u
out=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
MEMSIM=${MEMSIM:-memsim}
mkdir -p "$out"
out=$(cd "$out" && pwd)
for spec in "$@"; do
	# shellcheck disable=SC2086
	set -- $spec
	name=$1 opt=$(echo "$2" | sed 's/_$/ /') v=$3
	shift 3
	tab=$(printf '\t')
	if ! grep "^$name$tab" "$here/programs.tsv" | grep -q -e "$opt[0-9]"; then
		printf '%s\tfailed\t"%s" followed by a number is not in its command\n' \
			"$name" "$opt" | tee -a "$out/symbolic.tsv"
		continue
	fi
	sedv() { echo "s/$opt[0-9][0-9]*/$opt$1/"; }
	d=$out/$name
	rm -rf "$d" && mkdir -p "$d/sym"
	CORPUS_SED=$(sedv "$v") CORPUS_RECORD="--symbolic B=$v" \
		sh "$here/run.sh" fake "$d/sym" "$name" >/dev/null 2>&1
	rc=$(cat "$d/sym/$name.rc" 2>/dev/null || echo 1)
	if [ "$rc" = 3 ]; then
		why=$(grep -m1 'refused:' "$d/sym/$name.log" | sed 's/.*refused: //')
		printf '%s\trefused\t%s\n' "$name" "$why" | tee -a "$out/symbolic.tsv"
		continue
	elif [ "$rc" != 0 ]; then
		printf '%s\tfailed\tsymbolic recording exit %s\n' "$name" "$rc" |
			tee -a "$out/symbolic.tsv"
		continue
	fi
	lo=$(sed -n 2p "$d/sym/$name.csv" | cut -d' ' -f4)
	hi=$(sed -n 2p "$d/sym/$name.csv" | cut -d' ' -f5)
	# five values in the range, V apart: those given that are in it,
	# then its ends (at most 64) and the values next to them
	top=$hi
	[ "$top" -gt 64 ] && top=64
	vals=
	for b in "$@" $lo $top $((lo + 1)) $((top - 1)) $(((lo + top) / 2)) \
		$((lo + 2)) $((top - 2)); do
		[ "$(echo $vals | wc -w)" -ge 5 ] && break
		[ "$b" -ge "$lo" ] && [ "$b" -le "$hi" ] && [ "$b" != "$v" ] || continue
		case " $vals " in *" $b "*) continue ;; esac
		vals="$vals $b"
	done
	# shellcheck disable=SC2086
	set -- $vals
	res="exact" detail="holds for B=$lo..$hi; B=$*"
	[ $# -ge 5 ] || { res="short"; detail="$detail (the range has fewer values)"; }
	for b in "$@"; do
		mkdir -p "$d/$b"
		if ! "$MEMSIM" convert --at "B=$b" "$d/sym/$name.csv" "$d/$b/inst.csv" \
			>/dev/null 2>"$d/$b/conv.err"; then
			res=outside detail="B=$b: $(cat "$d/$b/conv.err")"
			break
		fi
		CORPUS_SED=$(sedv "$b") sh "$here/run.sh" fake "$d/$b" "$name" >/dev/null 2>&1
		if [ "$(cat "$d/$b/$name.rc")" != 0 ]; then
			res=failed detail="B=$b: the recording failed"
			break
		fi
		# The frees after the last other row are the program's
		# teardown: whether Python's cyclic collector reaches what it
		# left in reference cycles before the trace is written varies
		# with its threads (mingpt-chargpt's DataLoader: its 217 model
		# and optimizer frees end some recordings and not others,
		# docs/recording-boundary.md); they are left out of the
		# comparison.
		body() { awk -F, '{ l[NR] = $0; if ($3 != "free_completed") n = NR }
			END { for (i = 1; i <= n; i++) print l[i] }' "$1"; }
		if [ "$(body "$d/$b/inst.csv" | cksum)" != "$(body "$d/$b/$name.csv" | cksum)" ]; then
			# A program whose recordings differ from run to run (the
			# order of a few frees: docs/recording.md) is compared as
			# its two recordings are: the same rows in another order.
			mkdir -p "$d/$b/again"
			CORPUS_SED=$(sedv "$b") sh "$here/run.sh" fake "$d/$b/again" "$name" >/dev/null 2>&1
			rows() { cut -d, -f3- "$1" | LC_ALL=C sort; }
			if ! cmp -s "$d/$b/again/$name.csv" "$d/$b/$name.csv" &&
				[ "$(rows "$d/$b/inst.csv" | cksum)" = "$(rows "$d/$b/$name.csv" | cksum)" ]; then
				res=order
				detail="$detail; B=$b: its two recordings differ in the order of rows, as the instantiation does"
				continue
			fi
			res=differs detail="B=$b: $(cmp "$d/$b/inst.csv" "$d/$b/$name.csv" 2>&1 | head -1)"
			break
		fi
	done
	printf '%s\t%s\t%s\n' "$name" "$res" "$detail" | tee -a "$out/symbolic.tsv"
done
