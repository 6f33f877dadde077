#!/usr/bin/env python3
"""Diagnostic: replay a trace as cupy_replay.py does (fixed, no limit) but
through a SingleDeviceMemoryPool, and before every alloc whose rounded size
has more than one free chunk of the smallest fitting size in its arena,
record the candidates (id() of the _Chunk, its address) in CuPy's index
order, then the address CuPy handed out.  One JSON object: events (to
check the probe changed nothing) and ties (docs/validation.md, "The cupy policy").

usage: cupy_ties.py TRACE.csv"""
import json
import os
import sys

import cupy
import cupy.cuda.memory as cm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import replayfile  # noqa: E402  (validate/replayfile.py)


def main(path):
    pool = cm.SingleDeviceMemoryPool()
    streams = {}
    live = {}
    events = []
    ties = []
    req = 0
    with cupy.cuda.using_allocator(pool.malloc):
        for row in replayfile.trace_requests(path):
            act = row["action"]
            before = pool.total_bytes()
            if act == "alloc":
                s = int(row.get("stream") or 0)
                if s and s not in streams:
                    streams[s] = cupy.cuda.Stream(non_blocking=True)
                ident = streams[s].ptr if s else 0
                size = (int(row["size"]) + 511) // 512 * 512
                idx = pool._debug_arena_get_index(ident)
                cand = None
                for sz, ch in idx:
                    if sz >= size:
                        if cand is None:
                            cand = sz
                            c = []
                        if sz != cand:
                            break
                        c.append([id(ch), ch.ptr()])
                del idx
                a = int(row["addr"])
                if s:
                    with streams[s]:
                        live[a] = cupy.cuda.alloc(int(row["size"]))
                else:
                    live[a] = cupy.cuda.alloc(int(row["size"]))
                if cand is not None and len(c) > 1:
                    ties.append([req, cand, c, live[a].ptr])
            else:
                live.pop(int(row["addr"]), None)
            after = pool.total_bytes()
            if after != before:
                events.append([req, after - before])
            req += 1
    print(json.dumps({"trace": path, "events": events, "ties": ties}))


if __name__ == "__main__":
    main(sys.argv[1])
