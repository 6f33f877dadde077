#!/usr/bin/env python3
"""Replay device-trace CSVs through JAX's GPU allocator (XLA's BFC, as
`memsim run --policy bfc` models it; README "bfc against XLA's BFC").

Set XLA_PYTHON_CLIENT_PREALLOCATE and XLA_PYTHON_CLIENT_MEM_FRACTION in the
environment as the run needs them.  Every alloc row becomes a device
buffer of its size (a device_put of a uint8 view of one host buffer,
waited for), every free_completed row deletes its buffer; other rows are
skipped and requests are numbered as memsim numbers them (alloc and
free_completed rows).  Prints one JSON object a line per trace: the
memory_stats() figures at the peak, the change of pool_bytes at every
request that changed it, and the request that ran out of memory (-1).

usage: jax_replay.py TRACE.csv ...
"""
import csv
import json
import os
import sys

import jax
import numpy as np


def replay(path, host):
    dev = jax.devices()[0]
    live = {}
    events = []
    req = 0
    oom = -1
    last_pool = dev.memory_stats().get("pool_bytes", 0)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            act = row["action"]
            if act not in ("alloc", "free_completed"):
                continue
            if act == "alloc":
                n = int(row["size"])
                try:
                    x = jax.device_put(host[:n], dev)
                    x.block_until_ready()
                except Exception as e:  # XlaRuntimeError: RESOURCE_EXHAUSTED
                    if "RESOURCE_EXHAUSTED" not in str(e) and \
                       "out of memory" not in str(e).lower():
                        raise
                    oom = req
                    break
                live[int(row["addr"])] = x
            else:
                x = live.pop(int(row["addr"]), None)
                if x is not None:
                    x.delete()
            pool = dev.memory_stats().get("pool_bytes", 0)
            if pool != last_pool:
                events.append([req, pool - last_pool])
                last_pool = pool
            req += 1
    st = dev.memory_stats()
    for x in live.values():
        x.delete()
    return {"events": events, "oom": oom, "stats": st}


def main(paths):
    print(json.dumps({"jax": jax.__version__,
                      "preallocate": os.environ.get(
                          "XLA_PYTHON_CLIENT_PREALLOCATE", ""),
                      "fraction": os.environ.get(
                          "XLA_PYTHON_CLIENT_MEM_FRACTION", "")}),
          flush=True)
    biggest = 0
    for p in paths:
        with open(p, newline="") as f:
            for row in csv.DictReader(f):
                if row["action"] == "alloc":
                    biggest = max(biggest, int(row["size"]))
    host = np.zeros(biggest, np.uint8)
    for p in paths:
        out = {"trace": p}
        out.update(replay(p, host))
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
