#!/usr/bin/env python3
"""Replay device-trace CSVs through real CuPy's MemoryPool (the device
side of `memsim run --policy cupy`'s check, docs/validation.md, "The cupy policy").

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

With --record DIR each run also writes DIR/NAME.LIMIT.csv, a CuPy
recording in memsim's CSV format (seq,time_us,action,addr,size,stream):
the trace's alloc and free_completed rows with the address CuPy handed
out, a segment_alloc row before each alloc that took a new cudaMalloc
(CuPy allocates exactly the rounded size and hands out the new chunk from
its start, so the returned address is the segment's), segment_free rows
for the whole cudaMallocs free_all_blocks() gave back, and an oom row
(addr: the bytes the limit still allowed; size: the rounded request) where
CuPy raised OutOfMemoryError.  `memsim run --policy cupy --addresses
trace` replays it at CuPy's own addresses.  While the pool runs, only
preallocated lists record (the return value and total_bytes() change of
each request): a tie between equal-size chunks goes by where CPython put
their objects, and new long-lived objects would move them; the rows are
worked out afterwards.

usage: cupy_replay.py [--limit-fraction F ...] [--limit BYTES ...] [--ptrs]
                      [--record DIR] TRACE.csv ...
"""
import json
import os
import sys

import cupy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import replayfile  # noqa: E402  (validate/replayfile.py)

UNIT = 512  # ALLOCATION_UNIT_SIZE


def requests(path):
    """The trace's alloc and free_completed rows, in order."""
    return list(replayfile.trace_requests(path))


def write_recording(path, out, limit, rec_ptr, rec_delta, oom):
    """Works out the device calls from each request's returned address and
    total_bytes() change and writes the recording.  Returns the number of
    requests whose change it could not explain (0)."""
    rows = requests(path)
    segs = {}        # base -> size, the pool's cudaMallocs
    live = {}        # trace address -> CuPy address
    held = {}        # CuPy address -> rounded size, handed out
    bad = 0
    seq = 0
    with open(out, "w") as f:
        f.write("seq,time_us,action,addr,size,stream\n")

        def row(t, act, addr, size, s):
            nonlocal seq
            f.write("%d,%s,%s,%d,%d,%s\n" % (seq, t, act, addr, size, s))
            seq += 1

        def empty():
            return sorted(b for b, n in segs.items()
                          if not any(b <= p < b + n for p in held))

        for req, r in enumerate(rows):
            if req > oom >= 0:
                break
            t = r["time_us"]
            s = int(r.get("stream") or 0)
            if r["action"] == "free_completed":
                p = live.pop(int(r["addr"]), None)
                if p is not None:
                    del held[p]
                    row(t, "free_completed", p, int(r["size"]), s)
                continue
            size = -(-int(r["size"]) // UNIT) * UNIT
            d = rec_delta[req]
            if req == oom:
                e = empty()
                if d != -sum(segs[b] for b in e):
                    bad += 1
                for b in e:
                    row(t, "segment_free", b, segs.pop(b), s)
                row(t, "oom", max(limit - sum(segs.values()), 0), size, s)
                break
            p = rec_ptr[req]
            if d == size:
                segs[p] = size
                row(t, "segment_alloc", p, size, s)
            elif d != 0:
                e = empty()
                if d != size - sum(segs[b] for b in e):
                    bad += 1
                for b in e:
                    row(t, "segment_free", b, segs.pop(b), s)
                segs[p] = size
                row(t, "segment_alloc", p, size, s)
            live[int(r["addr"])] = p
            held[p] = size
            row(t, "alloc", p, int(r["size"]), s)
    return bad


def replay(path, limit, want_ptrs=False, record=None):
    # The recording's slots, made before the pool: one a request (a row
    # is longer than 16 bytes).  Plain lists: their headers take CPython's
    # 64-byte class, their items come from malloc, the ints they get take
    # the 32-byte class; an array.array's header would take the 80-byte
    # class of _Chunk and PooledMemory.
    nreq = os.path.getsize(path) // 16 + 1 if record else 0
    rec_ptr = [0] * nreq
    rec_delta = [0] * nreq
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
        for row in replayfile.trace_requests(path):
            act = row["action"]
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
                    if nreq:
                        rec_delta[req] = after - before
                    if after != before:
                        events.append([req, after - before])
                    break
                if want_ptrs:
                    ptrs.append([req, live[a].ptr, id(live[a].mem)])
                if nreq:
                    rec_ptr[req] = live[a].ptr
            else:
                live.pop(int(row["addr"]), None)
            after = pool.total_bytes()
            if after != before:
                events.append([req, after - before])
                if nreq:
                    rec_delta[req] = after - before
            peak_total = max(peak_total, after)
            peak_used = max(peak_used, pool.used_bytes())
            req += 1
    live.clear()
    pool.free_all_blocks()
    out = {"events": events, "peak_total": peak_total,
           "peak_used": peak_used, "oom": oom}
    if want_ptrs:
        out["ptrs"] = ptrs
    if record:
        name = os.path.basename(path)
        name = name[:-4] if name.endswith(".csv") else name
        rec = os.path.join(record, "%s.%d.csv" % (name, limit))
        out["recording"] = rec
        out["unexplained"] = write_recording(path, rec, limit, rec_ptr,
                                             rec_delta, oom)
    return out


def main(argv):
    fractions = []
    limits = []
    paths = []
    want_ptrs = False
    record = None
    it = iter(argv)
    for a in it:
        if a == "--limit-fraction":
            fractions.append(float(next(it)))
        elif a == "--limit":
            limits.append(int(next(it)))
        elif a == "--ptrs":
            want_ptrs = True
        elif a == "--record":
            record = next(it)
        else:
            paths.append(a)
    print(json.dumps({"cupy": cupy.__version__,
                      "python": sys.version.split()[0]}), flush=True)
    for path in paths:
        if limits:
            runs = limits
        else:
            free = replay(path, 0, want_ptrs, record)
            out = {"trace": path, "limit": 0}
            out.update(free)
            print(json.dumps(out), flush=True)
            runs = [int(free["peak_total"] * fr) // 512 * 512
                    for fr in fractions]
        for limit in runs:
            out = {"trace": path, "limit": limit}
            out.update(replay(path, limit, want_ptrs, record))
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
