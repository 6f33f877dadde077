#!/usr/bin/env python3
"""Probes of cudaMallocAsync's default pool (CuPy runtime bindings),
docs/cuda-async.md §2.  usage: async_probe.py [G] [P] [S] [S2]

Each probe starts from an empty, trimmed pool with its high-water marks
reset; the pool's release threshold is UINT64_MAX and all three reuse
policies are on, as PyTorch's backend:cudaMallocAsync sets them.  Prints
one line per operation:  probe op name size stream off_MiB off_B
reserved_MiB high_MiB used_B devused_MiB
(off: address minus the probe's first address; devused: cudaMemGetInfo
drop since the probe began).
"""
import sys
import time
import cupy
import numpy as np

rt = cupy.cuda.runtime
MiB = 1 << 20
A = {}
for nm, v in (("cudaMemPoolReuseFollowEventDependencies", 1),
              ("cudaMemPoolReuseAllowOpportunistic", 2),
              ("cudaMemPoolReuseAllowInternalDependencies", 3),
              ("cudaMemPoolAttrReleaseThreshold", 4),
              ("cudaMemPoolAttrReservedMemCurrent", 5),
              ("cudaMemPoolAttrReservedMemHigh", 6),
              ("cudaMemPoolAttrUsedMemCurrent", 7),
              ("cudaMemPoolAttrUsedMemHigh", 8)):
    A[nm] = getattr(rt, nm, v)

dev = 0
rt.setDevice(dev)
pool = rt.deviceGetDefaultMemPool(dev)
rt.memPoolSetAttribute(pool, A["cudaMemPoolAttrReleaseThreshold"], 2**64 - 1)
for k in ("cudaMemPoolReuseFollowEventDependencies",
          "cudaMemPoolReuseAllowOpportunistic",
          "cudaMemPoolReuseAllowInternalDependencies"):
    rt.memPoolSetAttribute(pool, A[k], 1)

spin = cupy.RawKernel(r'''
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}''', "spin")

streams = {0: 0}


def stream(k):
    if k not in streams:
        streams[k] = cupy.cuda.Stream(non_blocking=True).ptr
    return streams[k]


def attr(n):
    return int(rt.memPoolGetAttribute(pool, A[n]))


def reset():
    rt.deviceSynchronize()
    rt.memPoolTrimTo(pool, 0)
    rt.memPoolSetAttribute(pool, A["cudaMemPoolAttrReservedMemHigh"], 0)
    rt.memPoolSetAttribute(pool, A["cudaMemPoolAttrUsedMemHigh"], 0)


def devfree():
    return rt.memGetInfo()[0]


def run(probe, ops):
    reset()
    live = {}
    base = None
    f0 = devfree()
    r0 = attr("cudaMemPoolAttrReservedMemCurrent")
    print("%s begin - - - - - %d - - -" % (probe, r0 // MiB))
    for op in ops:
        k = op[0]
        nm, size, sk, off = "-", 0, "-", None
        if k == "m":
            nm, size, sk = op[1], op[2], op[3] if len(op) > 3 else 0
            p = rt.mallocAsync(size, stream(sk))
            live[nm] = (p, sk, size)
            if base is None:
                base = p
            off = p - base
        elif k == "f":
            nm = op[1]
            p, sk0, size = live.pop(nm)
            sk = op[2] if len(op) > 2 else sk0
            rt.freeAsync(p, stream(sk))
        elif k == "sync":
            rt.deviceSynchronize()
        elif k == "trim":
            size = op[1]
            rt.deviceSynchronize()
            rt.memPoolTrimTo(pool, size)
        elif k == "spin":
            sk = op[1]
            spin((1,), (1,), (np.int64(op[2]),), stream=cupy.cuda.ExternalStream(stream(sk)))
        elif k == "ev":
            e = rt.eventCreateWithFlags(2)
            rt.eventRecord(e, stream(op[1]))
            rt.streamWaitEvent(stream(op[2]), e, 0)
            rt.eventDestroy(e)
            sk = "%s>%s" % (op[1], op[2])
        elif k == "thr":
            size = op[1]
            rt.memPoolSetAttribute(pool, A["cudaMemPoolAttrReleaseThreshold"], op[1])
        elif k == "query":
            rt.streamQuery(stream(op[1])) if op[1] else None
        r = attr("cudaMemPoolAttrReservedMemCurrent")
        h = attr("cudaMemPoolAttrReservedMemHigh")
        u = attr("cudaMemPoolAttrUsedMemCurrent")
        du = (f0 - devfree()) / MiB
        print("%s %s %s %d %s %s %s %.4f %.4f %d %.1f" % (
            probe, k, nm, size, sk,
            "-" if off is None else "%.4f" % (off / MiB),
            "-" if off is None else str(off), r / MiB, h / MiB, u, du))
    for nm, (p, sk, size) in live.items():
        rt.freeAsync(p, stream(sk))
    rt.deviceSynchronize()
    rt.memPoolSetAttribute(pool, A["cudaMemPoolAttrReleaseThreshold"], 2**64 - 1)
    sys.stdout.flush()


def single_sizes():
    """G: the pool's reserved growth for one allocation of each size."""
    sizes = [1, 512, 513, 4096, 65536, MiB, 2 * MiB - 1, 2 * MiB,
             2 * MiB + 1, 3 * MiB, 4 * MiB + 1, 8 * MiB - 1, 8 * MiB,
             8 * MiB + 1, 16 * MiB, 20 * MiB, 30 * MiB, 32 * MiB - 1,
             32 * MiB, 32 * MiB + 1, 33 * MiB, 34 * MiB + 1, 48 * MiB,
             63 * MiB, 64 * MiB, 64 * MiB + 1, 96 * MiB + 1, 100 * MiB,
             128 * MiB, 128 * MiB + 1, 200 * MiB, 256 * MiB + 1,
             500 * MiB, 512 * MiB + 1, 1000 * MiB, 1024 * MiB,
             1024 * MiB + 1, 2048 * MiB + 1, 4096 * MiB + 1]
    print("# G size reserved_B high_B devused_MiB")
    for s in sizes:
        reset()
        f0 = devfree()
        p = rt.mallocAsync(s, 0)
        r = attr("cudaMemPoolAttrReservedMemCurrent")
        h = attr("cudaMemPoolAttrReservedMemHigh")
        print("G %d %d %d %.1f" % (s, r, h, (f0 - devfree()) / MiB))
        rt.freeAsync(p, 0)
    sys.stdout.flush()


def packing():
    """P: n allocations of one size: when reserved grows, address strides."""
    print("# P size i off_B reserved_B   (rows where reserved changed; "
          "first 3 offsets)")
    for s in [1, 512, 1000, 4096, 65536, 100000, MiB, MiB + 1, 3 * MiB,
              5 * MiB, 7 * MiB, 9 * MiB, 10 * MiB, 12 * MiB, 20 * MiB,
              24 * MiB, 40 * MiB, 50 * MiB, 70 * MiB]:
        reset()
        ps = []
        last = 0
        base = None
        n = min(400, max(6, (400 * MiB) // max(s, 1)))
        for i in range(n):
            p = rt.mallocAsync(s, 0)
            if base is None:
                base = p
            ps.append(p)
            r = attr("cudaMemPoolAttrReservedMemCurrent")
            if r != last or i < 3:
                print("P %d %d %d %d" % (s, i, p - base, r))
                last = r
            if r >= 400 * MiB:
                break
        print("P %d end n=%d reserved=%d" % (s, len(ps), last))
        for p in ps:
            rt.freeAsync(p, 0)
    sys.stdout.flush()


M = MiB
SCEN = [
    ("split", [("m", "a", 64 * M), ("f", "a"), ("m", "b", 16 * M),
               ("m", "c", 16 * M), ("m", "d", 1000), ("m", "e", 40 * M)]),
    ("coalesce", [("m", "a", 16 * M), ("m", "b", 16 * M), ("m", "c", 16 * M),
                  ("m", "g", 16 * M), ("f", "a"), ("f", "b"),
                  ("m", "d", 32 * M), ("f", "c"), ("m", "e", 24 * M)]),
    ("fit", [("m", "a", 8 * M), ("m", "g1", 8 * M), ("m", "b", 24 * M),
             ("m", "g2", 8 * M), ("m", "c", 12 * M), ("m", "g3", 8 * M),
             ("m", "g4", 60 * M), ("f", "a"), ("f", "b"), ("f", "c"),
             ("m", "x", 10 * M), ("m", "y", 8 * M), ("m", "z", 8 * M),
             ("m", "w", 20 * M)]),
    ("fit_order", [("m", "a", 12 * M), ("m", "g1", 8 * M),
                   ("m", "b", 12 * M), ("m", "g2", 8 * M),
                   ("m", "g3", 40 * M), ("f", "b"), ("f", "a"),
                   ("m", "x", 12 * M), ("m", "y", 12 * M)]),
    ("fit_small", [("m", "a", 4096), ("m", "g1", 4096), ("m", "b", 8192),
                   ("m", "g2", 4096), ("m", "c", 6144), ("m", "g3", 4096),
                   ("f", "a"), ("f", "b"), ("f", "c"), ("m", "x", 5000),
                   ("m", "y", 4096), ("m", "z", 1)]),
    ("grow_larger", [("m", "a", 32 * M), ("f", "a"), ("m", "b", 48 * M),
                     ("m", "c", 16 * M)]),
    ("grow_after_small", [("m", "s", 1000), ("m", "a", 20 * M),
                          ("m", "b", 20 * M), ("m", "c", 4 * M),
                          ("m", "d", 6 * M)]),
    ("small_in_large", [("m", "a", 64 * M), ("f", "a"), ("m", "s", 1000),
                        ("m", "t", 1000), ("m", "b", 60 * M)]),
    ("large_after_small", [("m", "s", 1000), ("m", "a", 30000000),
                           ("m", "b", 1000), ("m", "c", 2 * M)]),
    ("free_mid_chunk", [("m", "a", 10 * M), ("m", "b", 10 * M),
                        ("m", "c", 10 * M), ("m", "d", 10 * M),
                        ("f", "b"), ("f", "c"), ("m", "e", 20 * M),
                        ("m", "f", 21 * M)]),
    ("many_chunks_reuse", [("m", "a", 100 * M), ("m", "b", 100 * M),
                           ("m", "c", 100 * M), ("f", "a"), ("f", "c"),
                           ("m", "x", 150 * M), ("m", "y", 50 * M),
                           ("m", "z", 50 * M)]),
    # streams: validate/device/async_probe_streams.py (through PyTorch)
    # trimming and the threshold
    ("trim_partial", [("m", "s", 1000), ("m", "a", 20 * M), ("f", "a"),
                      ("trim", 0), ("m", "b", 60 * M), ("f", "b"),
                      ("trim", 0)]),
    ("trim_two", [("m", "a", 100 * M), ("m", "b", 100 * M), ("f", "a"),
                  ("trim", 0), ("m", "c", 100 * M), ("f", "c"), ("f", "b"),
                  ("m", "d", 300 * M), ("f", "d"), ("trim", 64 * M),
                  ("trim", 40 * M), ("trim", 1)]),
    ("trim_hole", [("m", "a", 10 * M), ("m", "b", 10 * M), ("m", "c", 10 * M),
                   ("m", "d", 10 * M), ("f", "b"), ("f", "c"), ("trim", 0),
                   ("m", "e", 20 * M)]),
    ("threshold0", [("thr", 0), ("m", "a", 64 * M), ("f", "a"),
                    ("m", "b", 32 * M), ("f", "b"), ("sync",),
                    ("m", "c", 10 * M)]),
    ("threshold32", [("thr", 32 * M), ("m", "a", 100 * M), ("f", "a"),
                     ("sync",)]),
    ("high", [("m", "a", 64 * M), ("f", "a"), ("trim", 0),
              ("m", "b", 32 * M), ("m", "c", 1000)]),
]


SCEN2 = [
    ("remap", [("m", "a", 32 * M), ("m", "b", 32 * M), ("m", "c", 1000),
               ("f", "a"), ("m", "d", 40 * M)]),
    ("remap2", [("m", "a", 32 * M), ("m", "b", 1000), ("f", "a"),
                ("m", "c", 33 * M)]),
    ("remap3", [("m", "a", 64 * M), ("m", "b", 1000), ("f", "a"),
                ("m", "c", 70 * M), ("m", "d", 20 * M)]),
    ("tie_lowfirst", [("m", "a", 12 * M), ("m", "g1", 8 * M),
                      ("m", "b", 12 * M), ("m", "g2", 8 * M),
                      ("m", "g3", 40 * M), ("f", "a"), ("f", "b"),
                      ("m", "x", 12 * M), ("m", "y", 12 * M)]),
    ("tie_three", [("m", "a", 4 * M), ("m", "g1", 1 * M),
                   ("m", "b", 4 * M), ("m", "g2", 1 * M),
                   ("m", "c", 4 * M), ("m", "g3", 1 * M),
                   ("m", "g4", 60 * M), ("f", "b"), ("f", "a"), ("f", "c"),
                   ("m", "x", 4 * M), ("m", "y", 4 * M), ("m", "z", 4 * M)]),
    ("tie_partial", [("m", "a", 6 * M), ("m", "g1", 1 * M),
                     ("m", "b", 6 * M), ("m", "g2", 1 * M),
                     ("m", "g4", 60 * M), ("f", "b"), ("f", "a"),
                     ("m", "x", 4 * M), ("m", "y", 4 * M)]),
    ("near_best", [("m", "a", 13 * M), ("m", "g1", 1 * M),
                   ("m", "b", 12 * M), ("m", "g2", 1 * M),
                   ("m", "g4", 60 * M), ("f", "a"), ("f", "b"),
                   ("m", "x", 11 * M)]),
    ("prefer_mapped", [("m", "a", 100 * M), ("m", "b", 1000), ("f", "a"),
                       ("trim", 0), ("m", "c", 10 * M), ("m", "d", 10 * M)]),
    ("hole_vs_tail", [("m", "a", 20 * M), ("m", "b", 1000), ("m", "c", 5 * M),
                      ("f", "a"), ("m", "d", 25 * M), ("m", "e", 18 * M)]),
    ("small_after_free", [("m", "a", 1000), ("m", "b", 1000),
                          ("m", "c", 1000), ("f", "b"), ("m", "d", 512),
                          ("m", "e", 600), ("f", "a"), ("m", "f", 2000)]),
    ("free_order_merge", [("m", "a", 4 * M), ("m", "b", 4 * M),
                          ("m", "c", 4 * M), ("m", "d", 4 * M),
                          ("m", "g", 40 * M), ("f", "c"), ("f", "a"),
                          ("f", "b"), ("m", "x", 12 * M), ("m", "y", 4 * M)]),
    ("big_first", [("m", "a", 2048 * M + 1), ("m", "b", 1000), ("f", "a"),
                   ("m", "c", 1000 * M), ("m", "d", 1000 * M),
                   ("m", "e", 100 * M)]),
]


def main():
    what = sys.argv[1:] or ["G", "P", "S"]
    props = rt.getDeviceProperties(dev)
    print("# device %s driver %d runtime %d cupy %s" % (
        props["name"].decode() if isinstance(props["name"], bytes)
        else props["name"], rt.driverGetVersion(), rt.runtimeGetVersion(),
        cupy.__version__))
    for w in what:
        try:
            if w == "G":
                single_sizes()
            elif w == "P":
                packing()
            elif w == "S2":
                print("# S2 probe op name size stream off_MiB off_B "
                      "reserved_MiB high_MiB used_B devused_MiB")
                for name, ops in SCEN2:
                    try:
                        run(name, ops)
                    except Exception as e:
                        print("%s error %r" % (name, e))
                        try:
                            reset()
                        except Exception:
                            pass
            elif w == "S":
                print("# S probe op name size stream off_MiB off_B "
                      "reserved_MiB high_MiB used_B devused_MiB")
                for name, ops in SCEN:
                    try:
                        run(name, ops)
                    except Exception as e:  # one probe, not the rest
                        print("%s error %r" % (name, e))
                        try:
                            reset()
                        except Exception:
                            pass
        except Exception as e:
            print("# %s failed: %r" % (w, e))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
