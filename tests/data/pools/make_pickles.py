#!/usr/bin/env python3
"""Writes two small hand-made snapshots with a private pool (issue 15):
the layout torch.cuda.memory._dump_snapshot() writes (PyTorch 2.11: segments
with 'segment_pool_id', trace entries that name no pool).

  x = 8000000 bytes, default pool  -> a new 20 MiB segment A (1-10 MiB
                                      requests get kLargeBuffer segments)
  p = 8000000 bytes in pool (0, 1) -> a new 20 MiB segment B: A's free
                                      12971520 bytes are the default pool's
  free p                           -> B is one free block, in the pool
  y = 16000000 bytes, default pool -> B is not the default pool's and A's
                                      rest is too small: a new 16 MiB
                                      segment C (round to 2 MiB; the
                                      777216 bytes left are not split off)

pool_full.pickle has the whole history: reserved peaks at 56 MiB
(58720256), allocated at x + C's block (24777216), 3 segments.  With the
pool ignored, y would take B's free block: 40 MiB, 2 segments.
pool_late.pickle's history begins after p (reset_peak_memory_stats()
there): A and B are seeded, B in its pool, and the figures are the same.
Standard library only:
    python3 tests/data/pools/make_pickles.py tests/data/pools
"""
import os
import pickle
import sys

MiB = 1 << 20
A = 0x7F0000000000
B = A + 64 * MiB
C = A + 128 * MiB


def blk(addr, size, req, state):
    return {"address": addr, "size": size, "requested_size": req,
            "state": state, "frames": []}


def seg(addr, total, blocks, pool):
    live = [b for b in blocks if b["state"] != "inactive"]
    return {"device": 0, "address": addr, "total_size": total,
            "allocated_size": sum(b["size"] for b in live),
            "active_size": sum(b["size"] for b in live),
            "requested_size": sum(b["requested_size"] for b in live),
            "stream": 0, "segment_type": "large", "segment_pool_id": pool,
            "is_expandable": False, "frames": [], "blocks": blocks}


def entry(t, action, addr, size):
    return {"action": action, "addr": addr, "size": size, "stream": 0,
            "time_us": 1796000000000000 + t, "compile_context": "N/A",
            "user_metadata": ""}


SEGMENTS = [
    seg(A, 20 * MiB, [blk(A, 8000000, 8000000, "active_allocated"),
                      blk(A + 8000000, 20 * MiB - 8000000, 0, "inactive")],
        (0, 0)),
    seg(B, 20 * MiB, [blk(B, 20 * MiB, 8000000, "inactive")], (0, 1)),
    seg(C, 16 * MiB, [blk(C, 16 * MiB, 16000000, "active_allocated")],
        (0, 0)),
]
TRACE = [
    entry(0, "segment_alloc", A, 20 * MiB), entry(1, "alloc", A, 8000000),
    entry(2, "segment_alloc", B, 20 * MiB), entry(3, "alloc", B, 8000000),
    entry(4, "free_requested", B, 8000000),
    entry(5, "free_completed", B, 8000000),
    entry(6, "segment_alloc", C, 16 * MiB), entry(7, "alloc", C, 16000000),
]


def main(out):
    for name, trace in (("pool_full", TRACE), ("pool_late", TRACE[4:])):
        with open(os.path.join(out, name + ".pickle"), "wb") as fp:
            pickle.dump({"segments": SEGMENTS, "device_traces": [trace],
                         "allocator_settings": {},
                         "external_annotations": []}, fp, protocol=4)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
