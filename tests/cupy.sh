#!/bin/sh
# The cupy policy against real CuPy (tests/data/validate/cupy/real.tsv:
# the six test traces replayed through CuPy 14.2.0's MemoryPool on an H200
# by validate/cupy_replay.py, with no limit and with set_limit at 90% and
# 60% of the unlimited peak).  On every run memsim must give the same peak
# used bytes and the same out-of-memory request; on the runs listed in
# $exact, the same change of total_bytes() at every request (every
# cudaMalloc and every free_all_blocks).  Elsewhere CuPy breaks ties
# between free chunks of equal size by the address of its Python chunk
# objects, which a trace cannot show (README, "The cupy policy").
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
dir=$DATA/validate/cupy
tmp=$(mktemp -d /tmp/memsim-cupy-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
exact="bert_infer_varlen.0.csv bert_infer_varlen.1262777856.csv
bert_infer_varlen.841851904.csv gpt2_fp32.0.csv gpt2_fp32.9868402176.csv
gpt2_varlen.8861193728.csv train_eval_emptycache.0.csv"

# json KEY FILE: the number under KEY in a memsim --json object.
json() { sed -n "s/^ *\"$1\": \\(-*[0-9]*\\),*$/\\1/p" "$2"; }

n=0; same=0
grep -v '^#' "$dir/real.tsv" | tail -n +2 >"$tmp/rows"
while IFS='	' read -r trace limit total used oom events; do
	n=$((n + 1))
	conf=""
	[ "$limit" = 0 ] || conf="limit:$limit"
	$MEMSIM run -p cupy -c "$conf" --json --segments "$tmp/seg.csv" \
		"$DATA/traces/$trace" >"$tmp/run.json" ||
		{ fail "$trace limit $limit: run"; continue; }
	[ "$(json allocated_bytes.all.peak "$tmp/run.json")" = "$used" ] ||
		fail "$trace limit $limit: peak used"
	[ "$(json oom_request "$tmp/run.json")" = "$oom" ] ||
		fail "$trace limit $limit: OOM request"
	# Net change of reserved bytes per request, as the real run logs it.
	awk -F, 'NR > 1 {
		d = ($2 == "segment_alloc") ? $4 : ($2 == "segment_free") ? -$4 : 0
		if (!($1 in net)) order[k++] = $1
		net[$1] += d
	} END {
		print "request,delta"
		for (i = 0; i < k; i++) if (net[order[i]]) printf "%s,%.0f\n", order[i], net[order[i]]
	}' "$tmp/seg.csv" >"$tmp/sim.csv"
	if cmp -s "$tmp/sim.csv" "$dir/$events"; then
		same=$((same + 1))
		[ "$(json reserved_bytes.all.peak "$tmp/run.json")" = "$total" ] ||
			fail "$trace limit $limit: same mallocs, other peak"
	else
		case " $(echo $exact) " in
		*" $events "*) fail "$trace limit $limit: mallocs differ from CuPy's" ;;
		esac
	fi
done <"$tmp/rows"
[ "$n" -eq 18 ] || fail "read $n rows of real.tsv, expected 18"
echo "cupy: $same of $n real runs with the same mallocs, frees and peak"
[ $fails -eq 0 ] && echo "cupy: all checks passed"
exit $fails
