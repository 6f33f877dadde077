#!/usr/bin/env python3
"""Probes of docs/cuda-async.md §3 a (recently freed ranges first), CuPy,
the device's default pool as PyTorch sets it (usage: async_probe_recent.py).
Each probe twice: 'tight' (calls back to
back) and 'query' (a pool attribute query after every call).
Prints: probe mode op id size_MiB off_MiB (off: minus the probe's first)."""
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

# (op, id, MiB): a = malloc, f = free
P = {
 # memsim (§3.1): 4->22 5->9 6->38 7->0 9->11; best fit alone: 5->0, 7->2
 "recent_first": [("a",0,8),("a",1,1),("a",2,12),("a",3,1),("f",0,0),("a",4,16),
                  ("f",2,0),("a",5,2),("a",6,11),("a",7,2),("f",1,0),("a",9,6.5)],
 # merged recent x2x3 -> y at 5; unmerged -> x2 at 1
 "recent_merge": [("a",1,1),("a",2,1),("a",3,1),("a",4,1),("a",5,1),("a",6,1),("a",7,1),
                  ("f",2,0),("f",3,0),("f",6,0),("a",8,1)],
 # memsim: 5 -> 3 (recent 4 MiB); best fit alone: 0 (old 2 MiB)
 "recent_vs_old": [("a",1,2),("a",2,1),("a",3,4),("a",4,1),("f",1,0),("a",9,8),
                   ("f",3,0),("a",5,2)],
}
for name, ops in P.items():
    for mode in ("tight", "query"):
        rt.deviceSynchronize(); rt.memPoolTrimTo(pool, 0)
        live = {}; base = None; out = []
        for op, i, mb in ops:
            if op == "a":
                p = rt.mallocAsync(int(mb * MiB), 0)
                base = p if base is None else base
                live[i] = p
                out.append((op, i, mb, (p - base) / MiB))
            else:
                rt.freeAsync(live.pop(i), 0)
                out.append((op, i, mb, -1))
            if mode == "query":
                rt.memPoolGetAttribute(pool, RC)
        for p in live.values():
            rt.freeAsync(p, 0)
        for o in out:
            print(name, mode, *o, flush=True)
rt.deviceSynchronize()
