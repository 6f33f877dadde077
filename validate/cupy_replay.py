#!/usr/bin/env python3
"""Replay device-trace CSVs through real CuPy's MemoryPool (the device
side of `memsim run --policy cupy`'s check, README "The cupy policy").

For each trace: alloc rows allocate their size on their stream (one CuPy
stream per recorded stream handle, the default stream for 0),
free_completed rows free, other rows are skipped; requests are numbered as
memsim numbers them (alloc and free_completed rows).  Prints one JSON
object a line: the trace, the limit, the net change of the pool's
total_bytes() at every request that changed it, peak total and used
bytes, and the request that ran out of memory (-1: none).

usage: cupy_replay.py [--limit-fraction F ...] TRACE.csv ...
"""
import csv
import json
import sys

import cupy


def replay(path, limit):
    pool = cupy.cuda.MemoryPool()
    if limit:
        pool.set_limit(size=limit)
    streams = {}
    live = {}
    events = []
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
                    try:
                        if s:
                            with streams[s]:
                                p = cupy.cuda.alloc(int(row["size"]))
                        else:
                            p = cupy.cuda.alloc(int(row["size"]))
                    except cupy.cuda.memory.OutOfMemoryError:
                        oom = req
                        after = pool.total_bytes()
                        if after != before:
                            events.append([req, after - before])
                        break
                    live[int(row["addr"])] = p
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
    return {"events": events, "peak_total": peak_total,
            "peak_used": peak_used, "oom": oom}


def main(argv):
    fractions = []
    paths = []
    it = iter(argv)
    for a in it:
        if a == "--limit-fraction":
            fractions.append(float(next(it)))
        else:
            paths.append(a)
    print(json.dumps({"cupy": cupy.__version__}), flush=True)
    for path in paths:
        free = replay(path, 0)
        out = {"trace": path, "limit": 0}
        out.update(free)
        print(json.dumps(out), flush=True)
        for fr in fractions:
            limit = int(free["peak_total"] * fr) // 512 * 512
            out = {"trace": path, "limit": limit}
            out.update(replay(path, limit))
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
