#!/bin/sh
# The `empty_cache` row (torch.cuda.empty_cache() where the program called
# it; docs/pytorch-allocator.md §6.2, §11.2): hand-made traces with exact
# figures.  A plain replay runs release_cached_blocks at the row (unsplit
# free segments only; expandable pages unmapped), cuda-async trims; under
# --recording the row makes the segment rows after it one call, replayed
# once; every format that can carry the row keeps it through `convert`.
# Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
MiB=1048576

# A 10 MiB block (a 10 MiB segment: kMinLargeAlloc and up are rounded to
# 2 MiB), a 4 MiB one (a 20 MiB segment), a 1 MiB one (small pool, 2 MiB)
# and 2 MiB split off the 4 MiB one's segment; the 10 and 4 MiB blocks
# freed; empty_cache; 16 MiB.  The call frees the 10 MiB segment only (the
# 20 MiB one still holds the 2 MiB block), and 16 MiB fits in none of the
# free pieces (4 and 14 MiB): a new segment, 32 -> 22 -> 38 MiB.  Without
# the row the 10 MiB segment stays cached: 48 MiB.
cat >"$tmp/ec.csv" <<EOF
seq,time_us,action,addr,size,stream
0,1,alloc,1048576000,$((10 * MiB)),0
1,2,alloc,2097152000,$((4 * MiB)),0
2,3,alloc,3145728000,$MiB,0
3,4,alloc,$((2097152000 + 4 * MiB)),$((2 * MiB)),0
4,5,free_completed,1048576000,$((10 * MiB)),0
5,6,free_completed,2097152000,$((4 * MiB)),0
6,7,empty_cache,0,0,0
7,8,alloc,1048576000,$((16 * MiB)),0
EOF
grep -v empty_cache "$tmp/ec.csv" >"$tmp/none.csv"
sums() {
	$MEMSIM run --json "$@" >"$tmp/o.json" || { fail "run $*"; return; }
	echo "$(key reserved_bytes.all.peak "$tmp/o.json") $(key reserved_bytes.all.current "$tmp/o.json") $(key segment.all.allocated "$tmp/o.json") $(key segment.all.freed "$tmp/o.json") $(key num_sync_all_streams "$tmp/o.json")"
}
got=$(sums "$tmp/ec.csv")
[ "$got" = "$((38 * MiB)) $((38 * MiB)) 4 1 1" ] || fail "pytorch with the row: $got"
got=$(sums "$tmp/none.csv")
[ "$got" = "$((48 * MiB)) $((48 * MiB)) 4 0 0" ] || fail "pytorch without the row: $got"
# The device calls: the 10 MiB segment freed at the row, then a new 16 MiB
# one (the log numbers requests as a run counts them, allocs and frees:
# both come after the first six).
$MEMSIM run --segments "$tmp/seg.csv" "$tmp/ec.csv" >/dev/null || fail "run --segments"
got=$(awk -F, 'NR > 1 && $1 >= 6 { printf "%s:%s:%s ", $1, $2, $4 }' "$tmp/seg.csv")
[ "$got" = "6:segment_free:$((10 * MiB)) 6:segment_alloc:$((16 * MiB)) " ] ||
	fail "segment events: $got"

# Expandable segments (20 MiB pages): 40 MiB maps two pages, 2 MiB a third;
# the 40 MiB block freed; the row unmaps its two pages (release_cached_blocks
# unmaps every whole free page, §7.3) and 30 MiB maps two again at the
# bottom: 60 -> 20 -> 60 MiB.  Without the row the 30 MiB block reuses the
# mapped pages: nothing is unmapped.
cat >"$tmp/ex.csv" <<EOF
seq,time_us,action,addr,size,stream
0,1,alloc,1048576000,$((40 * MiB)),0
1,2,alloc,2097152000,$((2 * MiB)),0
2,3,free_completed,1048576000,$((40 * MiB)),0
3,4,empty_cache,0,0,0
4,5,alloc,1048576000,$((30 * MiB)),0
EOF
$MEMSIM run --alloc-conf expandable_segments:True --segments "$tmp/seg.csv" \
	"$tmp/ex.csv" >/dev/null || fail "expandable run"
got=$(awk -F, 'NR > 1 { printf "%s:%s:%s ", $1, $2, $4 }' "$tmp/seg.csv")
[ "$got" = "0:segment_map:$((40 * MiB)) 1:segment_map:$((20 * MiB)) 3:segment_unmap:$((40 * MiB)) 3:segment_map:$((40 * MiB)) " ] ||
	fail "expandable segment events: $got"
grep -v empty_cache "$tmp/ex.csv" >"$tmp/exnone.csv"
$MEMSIM run --alloc-conf expandable_segments:True --segments "$tmp/seg.csv" \
	"$tmp/exnone.csv" >/dev/null || fail "expandable run without the row"
[ "$(grep -c segment_unmap "$tmp/seg.csv")" = 0 ] || fail "expandable without the row unmapped"

# cuda-async: emptyCache is cudaMemPoolTrimTo(pool, 0) (docs/cuda-async.md
# §1, §2.3): with nothing live every 32 MiB granule goes.
cat >"$tmp/ca.csv" <<EOF
seq,time_us,action,addr,size,stream
0,1,alloc,1048576000,$((40 * MiB)),0
1,2,free_completed,1048576000,$((40 * MiB)),0
2,3,empty_cache,0,0,0
EOF
$MEMSIM run --policy cuda-async --json "$tmp/ca.csv" >"$tmp/o.json" || fail "cuda-async run"
got="$(key reserved_bytes.all.peak "$tmp/o.json") $(key reserved_bytes.all.current "$tmp/o.json")"
[ "$got" = "$((64 * MiB)) 0" ] || fail "cuda-async trim: $got"
# Policies with no such call of their own keep their memory (bfc).
$MEMSIM run --policy bfc --json "$tmp/ca.csv" >"$tmp/o.json" || fail "bfc run"
[ "$(key reserved_bytes.all.current "$tmp/o.json")" != 0 ] || fail "bfc released memory"

# --recording: the segment rows after the row are that call's, replayed
# once (one num_sync_all_streams a call).  Two 12 MiB segments; one block
# freed, the other pending on a stream use (free_requested, its
# free_completed only at the call's synchronize_and_free_events) and free
# by the time the call releases: both segments go.  A second call frees
# nothing (the new block is live); the block freed after it stays cached.
cat >"$tmp/rec.csv" <<EOF
seq,time_us,action,addr,size,stream
0,1,segment_alloc,1048576000,$((12 * MiB)),0
1,1,alloc,1048576000,$((12 * MiB)),0
2,2,segment_alloc,2097152000,$((12 * MiB)),0
3,2,alloc,2097152000,$((12 * MiB)),0
4,3,free_requested,2097152000,$((12 * MiB)),0
5,3,free_completed,2097152000,$((12 * MiB)),0
6,4,free_requested,1048576000,$((12 * MiB)),0
7,5,empty_cache,0,0,0
8,5,free_completed,1048576000,$((12 * MiB)),0
9,5,segment_free,1048576000,$((12 * MiB)),0
10,5,segment_free,2097152000,$((12 * MiB)),0
11,6,segment_alloc,1048576000,$((12 * MiB)),0
12,6,alloc,1048576000,$((12 * MiB)),0
13,7,empty_cache,0,0,0
14,8,free_requested,1048576000,$((12 * MiB)),0
15,8,free_completed,1048576000,$((12 * MiB)),0
EOF
got=$(sums --recording "$tmp/rec.csv")
[ "$got" = "$((24 * MiB)) $((12 * MiB)) 3 2 2" ] || fail "--recording: $got"
$MEMSIM info "$tmp/rec.csv" >"$tmp/info.txt" || fail "info"
grep -q "^empty_cache 2 calls (rows), 0 hidden calls found$" "$tmp/info.txt" ||
	fail "info: $(grep empty_cache "$tmp/info.txt")"
# The same trace without its rows: the run is found (rule b: followed by a
# segment_alloc, no cap), the call that freed nothing is not.
grep -v ',empty_cache,' "$tmp/rec.csv" >"$tmp/recnone.csv"
got=$(sums --recording "$tmp/recnone.csv")
[ "$got" = "$((24 * MiB)) $((12 * MiB)) 3 2 1" ] || fail "--recording without rows: $got"
# A run of segment rows before a row is a call of its own (rule a).
cat >"$tmp/two.csv" <<EOF
seq,time_us,action,addr,size,stream
0,1,segment_alloc,1048576000,$((20 * MiB)),0
1,1,alloc,1048576000,$((4 * MiB)),0
2,2,free_requested,1048576000,$((4 * MiB)),0
3,2,free_completed,1048576000,$((4 * MiB)),0
4,3,segment_free,1048576000,$((20 * MiB)),0
5,4,empty_cache,0,0,0
EOF
got=$(sums --recording "$tmp/two.csv")
[ "$got" = "$((20 * MiB)) 0 1 1 2" ] || fail "run before a row: $got"
expect_error "e.csv:2: empty_cache with addr 0 and size 5" sh -c \
	"printf 'seq,time_us,action,addr,size,stream\n0,1,empty_cache,0,5,0\n' >'$tmp/e.csv' && $MEMSIM run '$tmp/e.csv'"

# convert keeps the row: binary (an action past the tag's 4 bits, bit 6 of
# a raw record), pickle and back to the same CSV; the binary file replays
# the same, read in batches and entry by entry (--recording).
for f in bin pickle; do
	$MEMSIM convert --to $f "$tmp/rec.csv" "$tmp/rec.$f" >/dev/null || fail "convert to $f"
	$MEMSIM convert --to csv "$tmp/rec.$f" "$tmp/back.csv" >/dev/null || fail "convert $f back"
	cmp -s "$tmp/rec.csv" "$tmp/back.csv" || fail "$f round trip: $(diff "$tmp/rec.csv" "$tmp/back.csv")"
done
$MEMSIM convert --to bin "$tmp/ec.csv" "$tmp/ec.bin" >/dev/null || fail "convert ec"
[ "$(sums "$tmp/ec.bin")" = "$((38 * MiB)) $((38 * MiB)) 4 1 1" ] || fail "binary plain run"
[ "$(sums --recording "$tmp/rec.bin")" = "$((24 * MiB)) $((12 * MiB)) 3 2 2" ] || fail "binary --recording"

# Real H200 recordings with the row (memsim record --gpu; real.tsv: the
# runs' own counters). With --recording every figure is the run's; a
# plain replay gives the same peaks (and serve's segment counts), the
# calls replayed where the program made them.
figs() { $MEMSIM run --json "$@" | tr -d ' ,"' | awk -F: '
	$1 == "allocated_bytes.all.peak" { a = $2 } $1 == "reserved_bytes.all.peak" { r = $2 }
	$1 == "segment.all.allocated" { s = $2 } $1 == "segment.all.freed" { f = $2 }
	END { print a, r, s, f }'; }
d="${MSIM_TESTDATA:-tests/data}/empty_cache"
grep -v '^#' "$d/real.tsv" | tail -n +2 >"$tmp/real.rows"
while read -r t conf a r s f; do
	if [ "$conf" = - ]; then set --; else set -- --alloc-conf "$conf"; fi
	[ "$(figs --recording "$@" "$d/$t")" = "$a $r $s $f" ] ||
		fail "$t --recording: $(figs --recording "$@" "$d/$t"), real $a $r $s $f"
	got=$(figs "$@" "$d/$t")
	[ "${got% * *}" = "$a $r" ] || fail "$t: $got, real peaks $a $r"
	[ "$t" != serve.gpu.msimtr ] || [ "$got" = "$a $r $s $f" ] ||
		fail "$t: $got, real $a $r $s $f"
done <"$tmp/real.rows"
[ "$(wc -l <"$tmp/real.rows")" -eq 3 ] || fail "real.tsv: not 3 rows"

finish empty_cache.sh
