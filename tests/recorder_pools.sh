#!/bin/sh
# memsim record --gpu's pool rows without a GPU (traces/memsim_record/
# pools.py): the hooks' events merged among the allocator's trace entries by
# trace position, pool ids numbered by first use, a graph capture's pool_begin
# keyed at its capture_end, and the CSV memsim reads back.  Needs Python 3
# only (no PyTorch); skips (77) without it.  The real recordings are checked
# by poolrec.sh.
set -u
MEMSIM=${MEMSIM:-./memsim}
PY=${MEMSIM_PYTHON:-python3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
"$PY" -c 'import sys' 2>/dev/null || { echo "no Python: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/memsim-recpools-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$SRC/traces" "$PY" - "$tmp/out.csv" <<'PY' || exit 1
import io, sys
from memsim_record import pools

def e(t, action, addr, size, stream=0):
    return {"time_us": t, "action": action, "addr": addr, "size": size,
            "stream": stream}

# The device trace of: a 1 MiB block in the default pool, a capture on
# stream 7 of pool (0, 5) allocating and freeing one block and keeping one,
# then a MemPool (3, 0) created, entered, left and deleted.
entries = [e(100, "segment_alloc", 4096, 2 << 20), e(100, "alloc", 4096, 1 << 20),
           e(200, "segment_alloc", 1 << 24, 2 << 20, 7), e(200, "alloc", 1 << 24, 1 << 20, 7),
           e(210, "free_requested", 1 << 24, 1 << 20, 7),
           e(210, "free_completed", 1 << 24, 1 << 20, 7),
           e(220, "alloc", 1 << 24, 1 << 20, 7), e(300, "alloc", 4096 + (1 << 20), 1 << 20)]
pos = iter([2, 5, 7, 8, 8, 8])
pe = pools.PoolEvents(lambda: next(pos))
begin = pe.note("pool_begin", None, 7)          # capture_begin: no key yet
pe.note("pool_begin", None, 9)                  # a capture that never ended
pools.PoolEvents.resolve(begin, (0, 5))          # capture_end
pe.note("pool_end", (0, 5))
pe.note("pool_create", (3, 0))
pe.note("pool_begin", (3, 0), 0)
pe.note("pool_end", (3, 0))
pe.note("pool_release", (3, 0), 0, 8)
pe.note("pool_create", (4, 0), 0, 8, size=1)    # MemPool(allocator)
ev = pe.numbered()
assert ev == [(2, "pool_begin", 1, 7, 0), (7, "pool_end", 1, 0, 0),
              (8, "pool_create", 2, 0, 0), (8, "pool_begin", 2, 0, 0),
              (8, "pool_end", 2, 0, 0), (8, "pool_release", 2, 0, 0),
              (8, "pool_create", 3, 0, 1)], ev
fp = io.StringIO()
pools.write_csv(fp, pools.merge(entries, ev))
want = """seq,time_us,action,addr,size,stream,pool
0,100,segment_alloc,4096,2097152,0,
1,100,alloc,4096,1048576,0,
2,100,pool_begin,0,0,7,1
3,200,segment_alloc,16777216,2097152,7,
4,200,alloc,16777216,1048576,7,
5,210,free_requested,16777216,1048576,7,
6,210,free_completed,16777216,1048576,7,
7,220,alloc,16777216,1048576,7,
8,220,pool_end,0,0,0,1
9,300,alloc,1052672,1048576,0,
10,300,pool_create,0,0,0,2
11,300,pool_begin,0,0,0,2
12,300,pool_end,0,0,0,2
13,300,pool_release,0,0,0,2
14,300,pool_create,0,1,0,3
"""
assert fp.getvalue() == want, fp.getvalue()
open(sys.argv[1], "w").write(fp.getvalue())
# No pool events: the usual six columns, unchanged.
fp = io.StringIO()
pools.write_csv(fp, pools.merge(entries[:2], []))
assert fp.getvalue() == ("seq,time_us,action,addr,size,stream\n"
                         "0,100,segment_alloc,4096,2097152,0\n"
                         "1,100,alloc,4096,1048576,0\n"), fp.getvalue()
# Events before the first entry take its time; past the end, the last's.
rows = pools.merge(entries[:1], [(0, "pool_begin", 1, 0), (5, "pool_end", 1, 0)])
assert [r[:2] for r in rows] == [(100, "pool_begin"), (100, "segment_alloc"),
                                 (100, "pool_end")], rows
# MemPool's flags on pool_create (6: use_on_oom and no_split) and a
# checkpoint restore that placed 3 blocks, both after the first entry.
rows = pools.merge(entries[:2], [(1, "pool_create", 1, 0, 6),
                                 (1, "pool_restore", 1, 0, 3)])
assert [(r[1], r[3], r[5]) for r in rows] == [
    ("segment_alloc", 2 << 20, None), ("pool_create", 6, 1),
    ("pool_restore", 3, 1), ("alloc", 1 << 20, None)], rows
# torch.cuda.empty_cache(): noted before the real call (no pool key), so
# the row comes before the segment_free entries of its release; no pool
# column when no pool row is there.
pe = pools.PoolEvents(lambda: 1)
pe.note("empty_cache", None, 7)
ev = pe.numbered()
assert ev == [(1, "empty_cache", None, 7, 0)], ev
fp = io.StringIO()
pools.write_csv(fp, pools.merge([e(100, "free_completed", 4096, 1 << 20),
                                 e(101, "segment_free", 4096, 2 << 20)], ev))
assert fp.getvalue() == ("seq,time_us,action,addr,size,stream\n"
                         "0,100,free_completed,4096,1048576,0\n"
                         "1,100,empty_cache,0,0,7\n"
                         "2,101,segment_free,4096,2097152,0\n"), fp.getvalue()
try:
    pools.merge(entries, [(0, "pool_bogus", 1, 0)])
    raise SystemExit("an unknown action was taken")
except ValueError:
    pass
PY
# memsim reads the merged trace: the capture's blocks stay in pool 1, so the
# last 1 MiB default-pool request takes the other half of segment 4096.
$MEMSIM run --recording --segments "$tmp/seg.csv" "$tmp/out.csv" >"$tmp/run.txt" ||
	{ echo "FAIL: memsim run"; exit 1; }
[ "$(grep -c segment_alloc "$tmp/seg.csv")" = 2 ] ||
	{ echo "FAIL: segments"; cat "$tmp/seg.csv"; exit 1; }
grep -q '^addresses  4 of 4 ' "$tmp/run.txt" ||
	{ echo "FAIL: addresses"; cat "$tmp/run.txt"; exit 1; }
echo "recorder_pools: merge and CSV as expected"
