#!/usr/bin/env python3
"""Many small random scenarios through the device's default cudaMallocAsync
pool as PyTorch sets it (CuPy; docs/cuda-async.md §3.1): a corpus of block
offsets against which placement rules are scored offline
(validate/device/async_offsets.py --fuzz).  Standard library and CuPy only.

usage: async_probe_fuzz.py SEED COUNT STREAMS MODE
MODE: tight (calls back to back), query (the reserved bytes read after
every call, as async_replay.py does by default) or sync (a
cudaDeviceSynchronize after every free).
Prints one JSON line per scenario: seed, streams, mode, ops [[op, id, size,
stream]] (op a = malloc, f = free), offs (each malloc's address minus the
scenario's first), reserved (after each op; query mode only),
reserved_high.  Each scenario starts from an empty pool trimmed to 0.
"""
import json
import random
import sys

KiB, MiB = 1 << 10, 1 << 20


def scenario(rng, streams):
    """40 to 80 ops; sizes of every scale the traces have: a few KiB to
    tens of MiB, many repeated (exact-size reuse), some odd."""
    pal = [rng.choice((512, 1536, 4 * KiB, 48 * KiB, 256 * KiB, 512 * KiB,
                       1 * MiB, 1536 * KiB, 2 * MiB, 3 * MiB, 4 * MiB,
                       6 * MiB, 8 * MiB, 12 * MiB, 20 * MiB, 40 * MiB))
           for _ in range(5)]
    ops, live, nid = [], [], 0
    for _ in range(rng.randint(40, 80)):
        if live and rng.random() < 0.45:
            i = rng.randrange(len(live)) if rng.random() < 0.6 else -1
            b = live.pop(i)
            ops.append(["f", b[0], b[1], b[2]])
        else:
            if rng.random() < 0.8:
                size = rng.choice(pal)
            else:
                size = rng.randint(1, 16 * MiB)
            s = rng.randrange(streams)
            ops.append(["a", nid, size, s])
            live.append((nid, size, s))
            nid += 1
    return ops


def main():
    seed, count, nstreams, mode = (int(sys.argv[1]), int(sys.argv[2]),
                                   int(sys.argv[3]), sys.argv[4])
    if mode not in ("tight", "query", "sync"):
        sys.exit("async_probe_fuzz.py: unknown mode %r" % mode)
    import cupy
    rt = cupy.cuda.runtime
    rt.setDevice(0)
    pool = rt.deviceGetDefaultMemPool(0)
    g = lambda n, v: getattr(rt, n, v)
    RC = g("cudaMemPoolAttrReservedMemCurrent", 5)
    RH = g("cudaMemPoolAttrReservedMemHigh", 6)
    rt.memPoolSetAttribute(pool, g("cudaMemPoolAttrReleaseThreshold", 4),
                           2**64 - 1)
    for n, v in (("cudaMemPoolReuseFollowEventDependencies", 1),
                 ("cudaMemPoolReuseAllowOpportunistic", 2),
                 ("cudaMemPoolReuseAllowInternalDependencies", 3)):
        rt.memPoolSetAttribute(pool, g(n, v), 1)
    streams = [0] + [rt.streamCreateWithFlags(1) for _ in range(nstreams - 1)]
    rng = random.Random(seed)
    for k in range(count):
        ops = scenario(rng, nstreams)
        rt.deviceSynchronize()
        rt.memPoolTrimTo(pool, 0)
        rt.memPoolSetAttribute(pool, RH, 0)
        live, offs, res, base = {}, [], [], None
        for op, i, size, s in ops:
            if op == "a":
                p = rt.mallocAsync(size, streams[s])
                base = p if base is None else base
                live[i] = (p, streams[s])
                offs.append(p - base)
            else:
                p, st = live.pop(i)
                rt.freeAsync(p, st)
                if mode == "sync":
                    rt.deviceSynchronize()
            if mode == "query":
                res.append(int(rt.memPoolGetAttribute(pool, RC)))
        high = int(rt.memPoolGetAttribute(pool, RH))
        for p, st in live.values():
            rt.freeAsync(p, st)
        print(json.dumps({"seed": seed, "k": k, "streams": nstreams,
                          "mode": mode, "ops": ops, "offs": offs,
                          "reserved": res, "reserved_high": high}))
    rt.deviceSynchronize()


if __name__ == "__main__":
    main()
