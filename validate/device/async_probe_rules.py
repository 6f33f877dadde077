#!/usr/bin/env python3
"""Probes of the pending-free rules of docs/cuda-async.md §3.1, through
the device's default cudaMallocAsync pool as PyTorch sets it (CuPy).
Each probe twice: 'tight' (calls back to back) and 'query' (a pool
attribute query after every call).  usage: async_probe_rules.py
Prints: probe mode op id size_MiB stream off_MiB (off: minus the probe's
first block; -1 for frees and other ops).

Each probe separates two readings; the comment above it gives the offset
each predicts for the probe's last block (R: the rules of §3.1 as now
written, P: the rule they replaced, recently freed ranges first and all
made old only when the top grows).
"""
import cupy

rt = cupy.cuda.runtime
MiB = 1 << 20
rt.setDevice(0)
pool = rt.deviceGetDefaultMemPool(0)
g = lambda n, v: getattr(rt, n, v)
rt.memPoolSetAttribute(pool, g("cudaMemPoolAttrReleaseThreshold", 4), 2**64 - 1)
for n, v in (("cudaMemPoolReuseFollowEventDependencies", 1),
             ("cudaMemPoolReuseAllowOpportunistic", 2),
             ("cudaMemPoolReuseAllowInternalDependencies", 3)):
    rt.memPoolSetAttribute(pool, g(n, v), 1)
RC = g("cudaMemPoolAttrReservedMemCurrent", 5)
streams = {0: 0, 1: rt.streamCreateWithFlags(1)}

# (op, id, MiB, stream): a = malloc, f = free (on the block's stream),
# e = cudaDeviceSynchronize + cudaMemPoolTrimTo(pool, 0)
P = {
    # a miss of every free range merges pending frees with their free
    # neighbours before the top is tried: R 0, P 81
    "miss_merges": [("a", 0, 8, 0), ("a", 1, 8, 0), ("a", 2, 1, 0),
                    ("f", 0), ("a", 3, 64, 0), ("f", 1), ("a", 4, 12, 0)],
    # a split range's rest is re-entered as newly freed: the 0.5 MiB block
    # goes to q (freed before the split) rather than the rest of p:
    # R 3, P 1.5
    "split_renews": [("a", "p", 2, 0), ("a", 1, 1, 0), ("a", "q", 0.5, 0),
                     ("a", 2, 1, 0), ("a", 3, 40, 0), ("f", "p"),
                     ("f", "q"), ("a", 4, 1.5, 0), ("a", 5, 0.5, 0)],
    # a free that merges with a pending neighbour re-enters the merged
    # range as newly freed: the 2 MiB block goes to u, freed between the
    # two halves of v: R 3, P 0
    "merge_renews": [("a", "v1", 1, 0), ("a", "v2", 1, 0), ("a", 1, 1, 0),
                     ("a", "u", 2, 0), ("a", 2, 1, 0), ("a", 3, 40, 0),
                     ("f", "v1"), ("f", "u"), ("f", "v2"), ("a", 4, 2, 0)],
    # pending frees become old newest first: of two 2 MiB holes made old
    # by a miss, the one freed last is taken first: R 3, P 0
    "old_newest_first": [("a", "x", 2, 0), ("a", 1, 1, 0), ("a", "y", 2, 0),
                         ("a", 2, 1, 0), ("f", "x"), ("f", "y"),
                         ("a", 3, 64, 0), ("a", 4, 2, 0)],
    # a block that needs a granule mapped (here after a trim) makes the
    # pending frees old: the 2 MiB block then takes the old exact hole o
    # rather than the pending 4 MiB range r: R 2, P 6
    "map_retires": [("a", 0, 2, 0), ("a", "o", 2, 0), ("a", 1, 2, 0),
                    ("a", "r", 4, 0), ("a", 2, 2, 0), ("a", "big", 84, 0),
                    ("a", 3, 1, 0), ("f", "o"), ("a", 4, 64, 0),
                    ("f", "big"), ("e",), ("f", "r"), ("a", 5, 32, 0),
                    ("a", 6, 2, 0)],
    # pending frees are a stream's own: a block on stream 0 takes an old
    # 8 MiB hole, not the 4 MiB range just freed on stream 1: R 5, P 0
    "stream_own": [("a", "r", 4, 1), ("a", 1, 1, 0), ("a", "o", 8, 0),
                   ("a", 2, 1, 0), ("f", "o"), ("a", 3, 64, 0),
                   ("f", "r"), ("a", 4, 4, 0)],
}

for name, ops in P.items():
    for mode in ("tight", "query"):
        rt.deviceSynchronize()
        rt.memPoolTrimTo(pool, 0)
        live = {}
        base = None
        out = []
        for op in ops:
            if op[0] == "a":
                _, i, mb, s = op
                p = rt.mallocAsync(int(mb * MiB), streams[s])
                base = p if base is None else base
                live[i] = (p, streams[s])
                out.append(("a", i, mb, s, (p - base) / MiB))
            elif op[0] == "f":
                p, st = live.pop(op[1])
                rt.freeAsync(p, st)
                out.append(("f", op[1], 0, "-", -1))
            else:
                rt.deviceSynchronize()
                rt.memPoolTrimTo(pool, 0)
                out.append(("e", "-", 0, "-", -1))
            if mode == "query":
                rt.memPoolGetAttribute(pool, RC)
        for p, st in live.values():
            rt.freeAsync(p, st)
        for o in out:
            print(name, mode, *o, flush=True)
rt.deviceSynchronize()
