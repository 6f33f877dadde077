#!/bin/sh
# memsim's models of other allocators against the real ones, replaying the
# six test traces on an H200 (docs/validation.md, "The cupy policy" and "bfc against
# XLA's BFC"):
#   tests/data/validate/cupy/real.tsv: CuPy 14.2.0's MemoryPool
#     (validate/device/cupy_replay.py, one process a run), no limit and set_limit
#     at 90% and 60%;
#   tests/data/validate/jax/real.tsv: JAX 0.11.2's BFC allocator
#     (validate/device/jax_replay.py), growing and preallocated, on the six and
#     on two traces replayed only after the model was set (docs/bfc.md).
# Each row: trace (in tests/data/traces, or else in a traces/ folder beside
# the row's file), policy, conf (- for none), peak reserved, peak allocated,
# the OOM request, the file of the real pool's net change of reserved
# bytes at every request that changed it and, where known, the allocated
# bytes after the last request (at the OOM, if one).  Every row must give the same OOM request;
# the rows named below must also give the same figures they are named
# with (events: every cudaMalloc and release, request by request).
#   tests/data/validate/cupy/recorded.tsv: CuPy recordings (rec/: the
#     trace's requests at the addresses CuPy handed out, its cudaMallocs
#     and free_all_blocks, its OOM as an oom row; validate/device/cupy_replay.py
#     --record, one process a run) and that run's own figures.  With
#     --addresses trace every one must give the run's events, peaks and
#     OOM, every allocation at its recorded address; with model addresses
#     the model's tie rule decides (docs/validation.md, "The cupy policy").
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
tmp=$(mktemp -d /tmp/memsim-real-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# What must be equal, by events file.  CuPy orders free chunks of equal
# size by the address of their Python objects; memsim models where CPython
# puts them (policies/cupy.c), which holds but for one run, where the
# interpreter's heap as the process left it decides (docs/validation.md, "The cupy
# policy"): there only the allocated peak and the OOM are held.
expect() {
	case $1 in
	cupy/prefetch_2stream.872570880.csv) echo "allocated" ;;
	cupy/*) echo "events reserved allocated" ;;
	jax/*) echo "events reserved allocated end" ;;
	esac
}

# json KEY FILE: the number under KEY in a memsim --json object.
json() { sed -n "s/^ *\"$1\": \\(-*[0-9]*\\),*$/\\1/p" "$2"; }

n=0; same=0
# sim_events SEGMENTS.csv: the net change of reserved bytes per request.
sim_events() {
	awk -F, 'NR > 1 {
		d = ($2 == "segment_alloc") ? $4 : ($2 == "segment_free") ? -$4 : 0
		if (!($1 in net)) order[k++] = $1
		net[$1] += d
	} END {
		print "request,delta"
		for (i = 0; i < k; i++)
			if (net[order[i]]) printf "%s,%.0f\n", order[i], net[order[i]]
	}' "$1"
}

for tsv in "$DATA"/validate/cupy/real.tsv "$DATA"/validate/jax/real.tsv; do
	grep -v '^#' "$tsv" | tail -n +2 >"$tmp/rows"
	while IFS='	' read -r trace policy conf reserved allocated oom events end; do
		n=$((n + 1))
		[ "$conf" = - ] && conf=""
		what="$policy ${conf:-(defaults)} on $trace"
		path=$DATA/traces/$trace
		[ -e "$path" ] || path=${tsv%/*}/traces/$trace
		$MEMSIM run -p "$policy" -c "$conf" --json \
			--segments "$tmp/seg.csv" "$path" \
			>"$tmp/run.json" || { fail "$what: run"; continue; }
		[ "$(json oom_request "$tmp/run.json")" = "$oom" ] ||
			fail "$what: OOM request"
		sim_events "$tmp/seg.csv" >"$tmp/sim.csv"
		cmp -s "$tmp/sim.csv" "$DATA/validate/$events" && same=$((same + 1))
		for check in $(expect "$events"); do
			case $check in
			events) cmp -s "$tmp/sim.csv" "$DATA/validate/$events" ||
				fail "$what: device calls differ from the real pool's" ;;
			reserved) [ "$(json reserved_bytes.all.peak "$tmp/run.json")" = "$reserved" ] ||
				fail "$what: peak reserved" ;;
			allocated) [ "$(json allocated_bytes.all.peak "$tmp/run.json")" = "$allocated" ] ||
				fail "$what: peak allocated" ;;
			end) [ "$(json allocated_bytes.all.current "$tmp/run.json")" = "$end" ] ||
				fail "$what: allocated bytes at the end" ;;
			esac
		done
	done <"$tmp/rows"
done
[ "$n" -eq 34 ] || fail "read $n rows, expected 34"
echo "realpools: $same of $n real runs with the same device calls"

# CuPy recordings: the run's OOM is a recorded one (an oom row), which the
# replay must repeat there (num_ooms 1, the last of oom + 1 requests).
# Model addresses: the same events as CuPy but where the objects' order
# and CuPy part (prefetch_2stream at 90%, where this run's CuPy took other
# ties than the one in real.tsv too, and resnet50_amp at 90%, where the
# model matches real.tsv's run but not this one).
rec=$DATA/validate/cupy/recorded.tsv
nrec=0; same_trace=0; same_model=0
grep -v '^#' "$rec" | tail -n +2 >"$tmp/rows"
while IFS='	' read -r trace conf reserved allocated oom events; do
	nrec=$((nrec + 1))
	[ "$conf" = - ] && conf=""
	for mode in trace model; do
		what="cupy ${conf:-(defaults)} on $trace, $mode addresses"
		$MEMSIM run -p cupy -c "$conf" --addresses $mode --json \
			--segments "$tmp/seg.csv" "$DATA/validate/cupy/$trace" \
			>"$tmp/run.json" || { fail "$what: run"; continue; }
		sim_events "$tmp/seg.csv" >"$tmp/sim.csv"
		if cmp -s "$tmp/sim.csv" "$DATA/validate/$events"; then
			[ $mode = trace ] && same_trace=$((same_trace + 1))
			[ $mode = model ] && same_model=$((same_model + 1))
		elif [ $mode = trace ]; then
			fail "$what: device calls differ from CuPy's"
		else
			case $trace in
			*/prefetch_2stream.872570880.*|*/resnet50_amp.3183606272.*) ;;
			*) fail "$what: device calls differ from CuPy's" ;;
			esac
		fi
		[ "$(json oom_request "$tmp/run.json")" = -1 ] ||
			fail "$what: an OOM the recording does not have"
		if [ "$oom" -ge 0 ]; then
			[ "$(json num_ooms "$tmp/run.json")" = 1 ] &&
				[ "$(json requests "$tmp/run.json")" = $((oom + 1)) ] ||
				fail "$what: the recorded OOM not repeated"
		else
			[ "$(json num_ooms "$tmp/run.json")" = 0 ] ||
				fail "$what: an OOM"
		fi
		[ "$(json allocated_bytes.all.peak "$tmp/run.json")" = "$allocated" ] ||
			fail "$what: peak allocated"
		[ $mode = trace ] || continue
		[ "$(json reserved_bytes.all.peak "$tmp/run.json")" = "$reserved" ] ||
			fail "$what: peak reserved"
		[ "$(json addr_other "$tmp/run.json")" = 0 ] &&
			[ "$(json addr_same "$tmp/run.json")" -gt 0 ] ||
			fail "$what: allocations away from their recorded address"
	done
done <"$tmp/rows"
[ "$nrec" -eq 18 ] || fail "read $nrec CuPy recordings, expected 18"
echo "realpools: CuPy recordings with the same device calls: $same_trace of" \
	"$nrec at recorded addresses, $same_model at model addresses"
[ $fails -eq 0 ] && echo "realpools: all checks passed"
exit $fails
