#!/usr/bin/env python3
"""Stream probes through PyTorch's backend:cudaMallocAsync (run with
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync): frees go to the block's
creation stream as PyTorch issues them.  One line per op: probe op name
size stream off_MiB reserved_MiB."""
import sys
import torch

M = 1 << 20
torch.cuda.init()
S = {0: torch.cuda.default_stream(), 1: torch.cuda.Stream(), 2: torch.cuda.Stream()}


def run(probe, ops):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    live = {}
    base = None
    print("%s begin reserved %d" % (probe, torch.cuda.memory_reserved() // M))
    for op in ops:
        k = op[0]
        off = "-"
        if k == "m":
            p = torch.cuda.caching_allocator_alloc(op[2], 0, S[op[3]])
            live[op[1]] = p
            base = p if base is None else base
            off = "%.4f" % ((p - base) / M)
        elif k == "f":
            torch.cuda.caching_allocator_delete(live.pop(op[1]))
        elif k == "spin":
            with torch.cuda.stream(S[op[1]]):
                torch.cuda._sleep(op[2])
        elif k == "ev":
            e = torch.cuda.Event()
            e.record(S[op[1]])
            S[op[2]].wait_event(e)
        elif k == "sync":
            torch.cuda.synchronize()
        elif k == "q":
            S[op[1]].query()
        print("%s %s %s %s %s %s %.1f" % (probe, k, op[1] if len(op) > 1 else "-",
              op[2] if len(op) > 2 else "-", op[3] if len(op) > 3 else "-",
              off, torch.cuda.memory_reserved() / M))
    for p in live.values():
        torch.cuda.caching_allocator_delete(p)
    torch.cuda.synchronize()
    sys.stdout.flush()


SP = 500000000
PROBES = [
    ("same", [("m", "a", 64 * M, 1), ("f", "a"), ("m", "b", 64 * M, 1)]),
    ("idle_other", [("m", "a", 64 * M, 1), ("f", "a"), ("m", "b", 64 * M, 2)]),
    ("idle_default", [("m", "a", 64 * M, 0), ("f", "a"), ("m", "b", 64 * M, 1)]),
    ("idle_to_default", [("m", "a", 64 * M, 1), ("f", "a"), ("m", "b", 64 * M, 0)]),
    ("busy_same", [("m", "a", 64 * M, 1), ("spin", 1, SP), ("f", "a"),
                   ("m", "b", 64 * M, 1)]),
    ("busy_other", [("m", "a", 64 * M, 1), ("spin", 1, SP), ("f", "a"),
                    ("m", "b", 64 * M, 2), ("sync",), ("m", "c", 64 * M, 2)]),
    ("busy_other_ev", [("m", "a", 64 * M, 1), ("spin", 1, SP), ("f", "a"),
                       ("ev", 1, 2), ("m", "b", 64 * M, 2)]),
    ("busy_other_sync", [("m", "a", 64 * M, 1), ("spin", 1, SP), ("f", "a"),
                         ("sync",), ("m", "b", 64 * M, 2)]),
    ("busy_other_small", [("m", "k", 1000, 1), ("m", "a", 1000, 1),
                          ("spin", 1, SP), ("f", "a"), ("m", "b", 1000, 2),
                          ("m", "c", 1000, 1)]),
    ("busy_default", [("m", "a", 64 * M, 0), ("spin", 0, SP), ("f", "a"),
                      ("m", "b", 64 * M, 1)]),
    ("pingpong", [("m", "a", 10 * M, 1), ("f", "a"), ("m", "b", 10 * M, 2),
                  ("f", "b"), ("m", "c", 10 * M, 1), ("m", "d", 10 * M, 2),
                  ("f", "c"), ("f", "d"), ("m", "e", 20 * M, 0)]),
]

for name, ops in PROBES:
    try:
        run(name, ops)
    except Exception as e:
        print("%s error %r" % (name, e))
