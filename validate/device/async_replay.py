#!/usr/bin/env python3
"""Replay a memsim request file (validate/torch_replay.py's protocol:
a ID SIZE STREAM / x ID SIZE STREAM / f ID / e) through the device's
default cudaMallocAsync pool as PyTorch's backend:cudaMallocAsync drives
it: release threshold UINT64_MAX, the three reuse policies on, each
malloc a cudaMallocAsync of the exact size on its stream (0: the legacy
default stream), each free a cudaFreeAsync on the block's stream, e a
cudaDeviceSynchronize + cudaMemPoolTrimTo(pool, 0).

usage: async_replay.py [--torch] [--mode tight|query|sync|onestream]
                       NAME REQS
Prints one JSON line: name, reserved_high, used_high, reserved_end, oom,
steps [[request index, reserved after it]] at every change of reserved,
offs (every block's address minus the lowest, in request order).
--torch: the same through torch.cuda.caching_allocator_alloc under
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (memory_stats peaks).
--mode (CuPy only; docs/cuda-async.md §3.1): query, the default, reads
the reserved bytes after every call (steps); tight issues the calls back
to back (steps only at e); sync also runs cudaDeviceSynchronize after
every free; onestream issues every request on the legacy default stream
whatever its stream.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import replayfile  # noqa: E402  (validate/replayfile.py)


def cupy_replay(name, path, mode="query"):
    import cupy
    rt = cupy.cuda.runtime
    rt.setDevice(0)
    pool = rt.deviceGetDefaultMemPool(0)
    g = lambda n, v: getattr(rt, n, v)
    THR, RC, RH, UC, UH = (g("cudaMemPoolAttrReleaseThreshold", 4),
                           g("cudaMemPoolAttrReservedMemCurrent", 5),
                           g("cudaMemPoolAttrReservedMemHigh", 6),
                           g("cudaMemPoolAttrUsedMemCurrent", 7),
                           g("cudaMemPoolAttrUsedMemHigh", 8))
    rt.memPoolSetAttribute(pool, THR, 2**64 - 1)
    for a in (1, 2, 3):
        rt.memPoolSetAttribute(pool, g(("cudaMemPoolReuseFollowEventDependencies",
                                        "cudaMemPoolReuseAllowOpportunistic",
                                        "cudaMemPoolReuseAllowInternalDependencies")[a - 1], a), 1)
    rt.memPoolTrimTo(pool, 0)
    rt.memPoolSetAttribute(pool, RH, 0)
    rt.memPoolSetAttribute(pool, UH, 0)
    streams = {0: 0}
    live = {}
    addrs = []
    steps = []
    last = 0
    oom = -1
    idx = 0
    for op in replayfile.requests(path):
        if op[0] in ("a", "x"):
            size, sh = op.size, op.stream
            if mode == "onestream":
                sh = 0
            if sh not in streams:
                streams[sh] = rt.streamCreateWithFlags(1)
            try:
                p = rt.mallocAsync(size, streams[sh])
            except cupy.cuda.runtime.CUDARuntimeError:
                if op[0] == "a":
                    oom = idx
                    break
                idx += 1
                continue
            addrs.append(p)
            if op[0] == "x":
                rt.freeAsync(p, streams[sh])
            else:
                live[op[1]] = (p, streams[sh])
            idx += 1
        elif op[0] == "f":
            p, s = live.pop(op[1])
            rt.freeAsync(p, s)
            if mode == "sync":
                rt.deviceSynchronize()
            idx += 1
        elif op[0] == "e":
            rt.deviceSynchronize()
            rt.memPoolTrimTo(pool, 0)
        if mode == "tight" and op[0] != "e":
            continue
        r = int(rt.memPoolGetAttribute(pool, RC))
        if r != last:
            steps.append([idx - 1 if op[0] != "e" else idx, r])
            last = r
    rt.deviceSynchronize()
    out = {"name": name, "via": "cupy", "mode": mode,
           "reserved_high": int(rt.memPoolGetAttribute(pool, RH)),
           "used_high": int(rt.memPoolGetAttribute(pool, UH)),
           "reserved_end": int(rt.memPoolGetAttribute(pool, RC)),
           "requests": idx, "oom": oom, "steps": steps,
           "base": min(addrs) if addrs else 0,
           "offs": [a - min(addrs) for a in addrs]}
    print(json.dumps(out))


def torch_replay(name, path):
    import torch
    torch.cuda.init()
    streams = {0: None}
    live = {}
    addrs = []
    steps = []
    last = 0
    oom = -1
    idx = 0
    for op in replayfile.requests(path):
        if op[0] in ("a", "x"):
            size, sh = op.size, op.stream
            if sh not in streams:
                streams[sh] = torch.cuda.Stream()
            try:
                p = torch.cuda.caching_allocator_alloc(size, 0, streams[sh])
            except torch.OutOfMemoryError:
                if op[0] == "a":
                    oom = idx
                    break
                idx += 1
                continue
            addrs.append(p)
            if op[0] == "x":
                torch.cuda.caching_allocator_delete(p)
            else:
                live[op[1]] = p
            idx += 1
        elif op[0] == "f":
            torch.cuda.caching_allocator_delete(live.pop(op[1]))
            idx += 1
        elif op[0] == "e":
            torch.cuda.empty_cache()
        r = torch.cuda.memory_reserved()
        if r != last:
            steps.append([idx - 1 if op[0] != "e" else idx, r])
            last = r
    torch.cuda.synchronize()
    st = torch.cuda.memory_stats()
    print(json.dumps({"name": name, "via": "torch " + torch.__version__,
                      "conf": torch.cuda.memory._get_allocator_settings()
                      if hasattr(torch.cuda.memory, "_get_allocator_settings") else "-",
                      "reserved_high": st.get("reserved_bytes.all.peak"),
                      "used_high": st.get("allocated_bytes.all.peak"),
                      "reserved_end": st.get("reserved_bytes.all.current"),
                      "requests": idx, "oom": oom, "steps": steps,
                      "base": min(addrs) if addrs else 0,
                      "offs": [a - min(addrs) for a in addrs]}))


if __name__ == "__main__":
    args = sys.argv[1:]
    mode = "query"
    if len(args) > 2 and args[0] == "--mode":
        mode = args[1]
        args = args[2:]
    if mode not in ("tight", "query", "sync", "onestream"):
        sys.exit("async_replay.py: unknown mode %r" % mode)
    if len(args) == 3 and args[0] == "--torch":
        torch_replay(args[1], args[2])
    elif len(args) == 2:
        cupy_replay(args[0], args[1], mode)
    else:
        sys.exit("usage: async_replay.py [--torch] [--mode MODE] NAME REQS")
