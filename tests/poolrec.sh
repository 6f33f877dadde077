#!/bin/sh
# Real recordings with CUDA graph pools and MemPools (tests/data/pools/
# real.tsv) reproduce exactly with `memsim run --recording`: the peaks, the
# cudaMalloc and cudaFree counts, the end state (allocated and reserved bytes,
# the live segments by address and size, as the run's snapshot holds them).
# The same trace without its pool rows must not (the rows are what decides
# it).  Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
DATA=${MSIM_TESTDATA:-tests/data}/pools
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
json() { sed -n "s/^ *\"$1\": \\(-*[0-9]*\\),*$/\\1/p" "$2"; }
# live SEGMENTS.csv: the segments alive at the end, address:size by address
live() {
	awk -F, 'NR > 1 { k = $3 ":" $4
		if ($2 == "segment_alloc") n[k]++; else if ($2 == "segment_free") n[k]-- }
	END { for (k in n) if (n[k] > 0) print k }' "$1" | sort -t: -k1,1n |
		tr '\n' ' ' | sed 's/ $//'
}

grep -v '^#' "$DATA/real.tsv" >"$tmp/rows"
n=0
while IFS='	' read -r trace pa pr sa sf ca cr segs; do
	n=$((n + 1))
	$MEMSIM run --recording --json --segments "$tmp/seg.csv" \
		"$DATA/$trace" >"$tmp/run.json" || { fail "$trace: run"; continue; }
	for kv in "allocated_bytes.all.peak $pa" "reserved_bytes.all.peak $pr" \
		"segment.all.allocated $sa" "segment.all.freed $sf" \
		"allocated_bytes.all.current $ca" "reserved_bytes.all.current $cr"; do
		set -- $kv
		got=$(json "$1" "$tmp/run.json")
		[ "$got" = "$2" ] || fail "$trace: $1 $got, real $2"
	done
	got=$(live "$tmp/seg.csv")
	[ "$got" = "$segs" ] || fail "$trace: live segments $got, real $segs"
	# Without its pool rows the replay is wrong: reserved peak differs.
	awk -F, 'NR == 1 || $3 !~ /^pool_/' "$DATA/$trace" >"$tmp/nopool.csv"
	$MEMSIM run --recording --json "$tmp/nopool.csv" >"$tmp/np.json" ||
		{ fail "$trace: run without pool rows"; continue; }
	[ "$(json reserved_bytes.all.peak "$tmp/np.json")" != "$pr" ] ||
		fail "$trace: the pool rows change nothing"
done <"$tmp/rows"
[ "$n" -ge 1 ] || fail "no rows in real.tsv"

# Snapshot pickles: the segments' segment_pool_id puts the allocs in their
# pools (traces/trace.c, pool_derive()).  Each row of snapshots.tsv: the
# pickle, the run options (- for none) and the figures the run must give.
grep -v '^#' "$DATA/snapshots.tsv" >"$tmp/snaps"
k=0
while IFS='	' read -r pk opts pa pr sa sf; do
	k=$((k + 1))
	[ "$opts" = - ] && opts=
	$MEMSIM run $opts --json "$DATA/$pk" >"$tmp/run.json" ||
		{ fail "$pk $opts: run"; continue; }
	for kv in "allocated_bytes.all.peak $pa" "reserved_bytes.all.peak $pr" \
		"segment.all.allocated $sa" "segment.all.freed $sf"; do
		set -- $kv
		got=$(json "$1" "$tmp/run.json")
		[ "$got" = "$2" ] || fail "$pk $opts: $1 $got, real $2"
	done
	# --recording checks the end state against the snapshot's segments.
	[ "$opts" != --recording ] ||
		grep -q '"snapshot_state": "matches' "$tmp/run.json" ||
		fail "$pk: end state $(grep snapshot_state "$tmp/run.json")"
done <"$tmp/snaps"
[ "$k" -ge 1 ] || fail "no rows in snapshots.tsv"
[ "$fails" -eq 0 ] || exit 1
echo "poolrec: $n recordings and $k snapshot runs reproduce"
