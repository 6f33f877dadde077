#!/usr/bin/env python3
"""Replay device-trace CSVs through real CuPy's MemoryPool (the device
side of `memsim run --policy cupy`'s check, README "The cupy policy").

For each trace: alloc rows allocate their size on their stream (one CuPy
stream per recorded stream handle, the default stream for 0),
free_completed rows free, other rows are skipped; requests are numbered as
memsim numbers them (alloc and free_completed rows).  Prints one JSON
object a line: the trace, the limit, the net change of the pool's
total_bytes() at every request that changed it, peak total and used
bytes, and the request that ran out of memory (-1: none).  With --ptrs
also the address CuPy handed out at every alloc and the id() of its
PooledMemory (which shows where CPython places the pool's objects).

Nothing but the `live` dict holds a pointer: a free_completed row frees
at once.  (Until 2026-12-01 a local variable kept the last pointer alive
until the next alloc had been served, so a block freed right after its
alloc stayed in use through that next alloc.)

With --limit BYTES (repeatable) only those limits run; otherwise the run
with no limit, then one per --limit-fraction of its peak total_bytes().

usage: cupy_replay.py [--limit-fraction F ...] [--limit BYTES ...] [--ptrs]
                      TRACE.csv ...
"""
import csv
import json
import sys

import cupy


def replay(path, limit, want_ptrs=False):
    pool = cupy.cuda.MemoryPool()
    if limit:
        pool.set_limit(size=limit)
    streams = {}
    live = {}
    events = []
    ptrs = []
    peak_total = peak_used = 0
    oom = -1
    req = 0
    with cupy.cuda.using_allocator(pool.malloc):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                act = row["action"]
                if act not in ("alloc", "free_completed"):
                    continue
                before = pool.total_bytes()
                if act == "alloc":
                    s = int(row.get("stream") or 0)
                    if s and s not in streams:
                        streams[s] = cupy.cuda.Stream(non_blocking=True)
                    a = int(row["addr"])
                    # Straight into `live`: no other name may keep the
                    # pointer alive past its free_completed row.
                    try:
                        if s:
                            with streams[s]:
                                live[a] = cupy.cuda.alloc(int(row["size"]))
                        else:
                            live[a] = cupy.cuda.alloc(int(row["size"]))
                    except cupy.cuda.memory.OutOfMemoryError:
                        oom = req
                        after = pool.total_bytes()
                        if after != before:
                            events.append([req, after - before])
                        break
                    if want_ptrs:
                        ptrs.append([req, live[a].ptr, id(live[a].mem)])
                else:
                    live.pop(int(row["addr"]), None)
                after = pool.total_bytes()
                if after != before:
                    events.append([req, after - before])
                peak_total = max(peak_total, after)
                peak_used = max(peak_used, pool.used_bytes())
                req += 1
    live.clear()
    pool.free_all_blocks()
    out = {"events": events, "peak_total": peak_total,
           "peak_used": peak_used, "oom": oom}
    if want_ptrs:
        out["ptrs"] = ptrs
    return out


def main(argv):
    fractions = []
    limits = []
    paths = []
    want_ptrs = False
    it = iter(argv)
    for a in it:
        if a == "--limit-fraction":
            fractions.append(float(next(it)))
        elif a == "--limit":
            limits.append(int(next(it)))
        elif a == "--ptrs":
            want_ptrs = True
        else:
            paths.append(a)
    print(json.dumps({"cupy": cupy.__version__,
                      "python": sys.version.split()[0]}), flush=True)
    for path in paths:
        if limits:
            runs = limits
        else:
            free = replay(path, 0, want_ptrs)
            out = {"trace": path, "limit": 0}
            out.update(free)
            print(json.dumps(out), flush=True)
            runs = [int(free["peak_total"] * fr) // 512 * 512
                    for fr in fractions]
        for limit in runs:
            out = {"trace": path, "limit": limit}
            out.update(replay(path, limit, want_ptrs))
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
