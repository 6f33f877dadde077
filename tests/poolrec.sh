#!/bin/sh
# Real recordings with CUDA graph pools and MemPools (tests/data/pools/
# real.tsv) reproduce exactly with `memsim run --recording`: the peaks, the
# cudaMalloc and cudaFree counts, the end state (allocated and reserved bytes,
# the live segments by address and size, as the run's snapshot holds them).
# The same trace without its pool rows must not (the rows are what decides
# it).  So do the recordings of graphreuse.tsv under their own settings
# (graph_capture_record_stream_reuse, a MemPool with its own allocator),
# and those of poolopts.tsv (MemPool's use_on_oom and no_split, checkpointed
# pool states), every alloc at its recorded address.
# Run by `make check` with MEMSIM and MSIM_TESTDATA.
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

# figures TRACE RUN.json PA PR SA SF CA CR: the run's peak allocated and
# reserved bytes, segments allocated and freed, allocated and reserved bytes
# at the end must be the real run's.
figures() {
	f_trace=$1 f_json=$2
	shift 2
	for f_key in allocated_bytes.all.peak reserved_bytes.all.peak \
		segment.all.allocated segment.all.freed \
		allocated_bytes.all.current reserved_bytes.all.current; do
		f_got=$(json "$f_key" "$f_json")
		[ "$f_got" = "$1" ] || fail "$f_trace: $f_key $f_got, real $1"
		shift
	done
}

grep -v '^#' "$DATA/real.tsv" >"$tmp/rows"
n=0
while IFS='	' read -r trace pa pr sa sf ca cr segs; do
	n=$((n + 1))
	$MEMSIM run --recording --json --segments "$tmp/seg.csv" \
		"$DATA/$trace" >"$tmp/run.json" || { fail "$trace: run"; continue; }
	figures "$trace" "$tmp/run.json" "$pa" "$pr" "$sa" "$sf" "$ca" "$cr"
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

# graph_capture_record_stream_reuse and MemPools with an allocator of their
# own, a MemPool's death (graphreuse.tsv): each recording under its own
# settings, and a contrast that must change its figures.
grep -v '^#' "$DATA/graphreuse.tsv" >"$tmp/rows"
m=0
while IFS='	' read -r trace conf contrast pa pr sa sf ca cr segs; do
	m=$((m + 1))
	set -- ; [ "$conf" = - ] || set -- --alloc-conf "$conf"
	$MEMSIM run --recording "$@" --json --segments "$tmp/seg.csv" \
		"$DATA/$trace" >"$tmp/run.json" || { fail "$trace: run"; continue; }
	figures "$trace" "$tmp/run.json" "$pa" "$pr" "$sa" "$sf" "$ca" "$cr"
	got=$(live "$tmp/seg.csv")
	[ "$segs" = - ] || [ "$got" = "$segs" ] ||
		fail "$trace: live segments $got, real $segs"
	# The binary format carries the pool rows and their flag.
	set -- ; [ "$conf" = - ] || set -- --alloc-conf "$conf"
	$MEMSIM convert --to bin "$DATA/$trace" "$tmp/t.bin" >/dev/null &&
		$MEMSIM run --recording "$@" --json "$tmp/t.bin" >"$tmp/b.json" ||
		{ fail "$trace: binary copy"; continue; }
	[ "$(json reserved_bytes.all.peak "$tmp/b.json")" = "$pr" ] ||
		fail "$trace: binary copy's reserved peak differs"
	cp "$DATA/$trace" "$tmp/contrast.csv"
	case $contrast in
	-) continue ;;
	nopool) awk -F, 'NR == 1 || $3 !~ /^pool_/' "$DATA/$trace" \
		>"$tmp/contrast.csv" ;;
	noown) sed 's/,pool_create,0,1,/,pool_create,0,0,/' "$DATA/$trace" \
		>"$tmp/contrast.csv" ;;
	nodel) sed 's/,pool_release,0,1,/,pool_release,0,0,/' "$DATA/$trace" \
		>"$tmp/contrast.csv" ;;
	conf:*) set -- --alloc-conf "${contrast#conf:}" ;;
	*) fail "$trace: unknown contrast $contrast"; continue ;;
	esac
	cmp -s "$DATA/$trace" "$tmp/contrast.csv" && [ "${contrast%%:*}" != conf ] &&
		fail "$trace: the $contrast contrast changes no row"
	$MEMSIM run --recording "$@" --json "$tmp/contrast.csv" >"$tmp/c.json" ||
		{ fail "$trace: run with $contrast"; continue; }
	got="$(json reserved_bytes.all.peak "$tmp/c.json") $(json \
		segment.all.freed "$tmp/c.json") $(json \
		reserved_bytes.all.current "$tmp/c.json")"
	[ "$got" != "$pr $sf $cr" ] || fail "$trace: $contrast changes nothing"
done <"$tmp/rows"
[ "$m" -ge 1 ] || fail "no rows in graphreuse.tsv"

# MemPool(use_on_oom=, no_split=) and setCheckpointPoolState (pool_restore
# rows; poolopts.tsv): each recording under its run options, every alloc at
# its recorded address, and a contrast that must change its figures.
grep -v '^#' "$DATA/poolopts.tsv" >"$tmp/rows"
o=0
while IFS='	' read -r trace opts contrast pa pr sa sf ca cr segs; do
	o=$((o + 1))
	[ "$opts" = - ] && opts=
	# shellcheck disable=SC2086 # opts holds options and values
	$MEMSIM run --recording $opts --json --segments "$tmp/seg.csv" \
		"$DATA/$trace" >"$tmp/run.json" || { fail "$trace: run"; continue; }
	figures "$trace" "$tmp/run.json" "$pa" "$pr" "$sa" "$sf" "$ca" "$cr"
	got=$(live "$tmp/seg.csv")
	[ "$segs" = - ] || [ "$got" = "$segs" ] ||
		fail "$trace: live segments $got, real $segs"
	# shellcheck disable=SC2086
	$MEMSIM run --recording $opts "$DATA/$trace" >"$tmp/run.txt" ||
		{ fail "$trace: run"; continue; }
	addrs=$(sed -n 's/^addresses  \([0-9]*\) of \([0-9]*\) .*/\1 \2/p' "$tmp/run.txt")
	set -- $addrs
	[ $# = 2 ] && [ "$1" = "$2" ] ||
		fail "$trace: allocations at their recorded address: $addrs"
	# The binary format carries the new rows too.
	# shellcheck disable=SC2086
	$MEMSIM convert --to bin "$DATA/$trace" "$tmp/t.bin" >/dev/null &&
		$MEMSIM run --recording $opts --json "$tmp/t.bin" >"$tmp/b.json" ||
		{ fail "$trace: binary copy"; continue; }
	[ "$(json reserved_bytes.all.peak "$tmp/b.json")" = "$pr" ] ||
		fail "$trace: binary copy's reserved peak differs"
	case $contrast in
	flags:*) awk -F, -v f="${contrast#flags:}" 'BEGIN { OFS = "," }
		$3 == "pool_create" { $5 = f } { print }' "$DATA/$trace" \
		>"$tmp/contrast.csv" ;;
	norestore) awk -F, '$3 != "pool_restore"' "$DATA/$trace" \
		>"$tmp/contrast.csv" ;;
	nopool) awk -F, 'NR == 1 || $3 !~ /^pool_/' "$DATA/$trace" \
		>"$tmp/contrast.csv" ;;
	*) fail "$trace: unknown contrast $contrast"; continue ;;
	esac
	cmp -s "$DATA/$trace" "$tmp/contrast.csv" &&
		fail "$trace: the $contrast contrast changes no row"
	# shellcheck disable=SC2086
	$MEMSIM run --recording $opts "$tmp/contrast.csv" >"$tmp/c.txt" ||
		{ fail "$trace: run with $contrast"; continue; }
	# shellcheck disable=SC2086
	$MEMSIM run --recording $opts "$DATA/$trace" >"$tmp/r.txt"
	grep -v '^trace ' "$tmp/c.txt" >"$tmp/c2.txt"
	grep -v '^trace ' "$tmp/r.txt" >"$tmp/r2.txt"
	cmp -s "$tmp/c2.txt" "$tmp/r2.txt" && fail "$trace: $contrast changes nothing"
done <"$tmp/rows"
[ "$o" -ge 1 ] || fail "no rows in poolopts.tsv"

# Snapshot pickles: the segments' segment_pool_id puts the allocs in their
# pools (traces/trace_seed.c, msim_trace_pool_derive()).  Each row of snapshots.tsv: the
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

# The same traces in the binary format replay the same, plain and with
# --recording (its fast reader dropped the pool rows until the empty_cache
# round found it: a MemPool trace replayed as one without pools).
b=0
for csv in "$DATA"/*.csv; do
	$MEMSIM run --json "$csv" >"$tmp/c.json" 2>/dev/null || continue
	$MEMSIM convert --to bin "$csv" "$tmp/t.msimtr" >/dev/null ||
		{ fail "convert $csv"; continue; }
	b=$((b + 1))
	for r in "" --recording; do
		# The key holds the trace's hash, another for another file.
		$MEMSIM run --json $r "$csv" | grep -v -e '"trace' \
			-e '"wall_ms' -e '"setting_key' >"$tmp/c.json"
		$MEMSIM run --json $r "$tmp/t.msimtr" | grep -v -e '"trace' \
			-e '"wall_ms' -e '"setting_key' >"$tmp/b.json"
		cmp -s "$tmp/c.json" "$tmp/b.json" ||
			fail "$(basename "$csv") $r: binary differs: $(diff "$tmp/c.json" "$tmp/b.json" | head -4)"
	done
done
[ "$b" -ge 15 ] || fail "only $b pool traces converted"
[ "$fails" -eq 0 ] || exit 1
echo "poolrec: $n + $m + $o recordings and $k snapshot runs reproduce, $b in binary too"
