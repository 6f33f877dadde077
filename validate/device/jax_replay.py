#!/usr/bin/env python3
"""Replay device-trace CSVs through JAX's GPU allocator (XLA's BFC, as
`memsim run --policy bfc` models it; docs/validation.md, "bfc against XLA's BFC").

Set XLA_PYTHON_CLIENT_PREALLOCATE and XLA_PYTHON_CLIENT_MEM_FRACTION in the
environment as the run needs them.  Every alloc row becomes a device
buffer of its size (a device_put of a uint8 view of one host buffer,
waited for), every free_completed row deletes its buffer; other rows are
skipped and requests are numbered as memsim numbers them (alloc and
free_completed rows).  Prints one JSON object a line per trace: the
memory_stats() figures at the peak, the change of pool_bytes at every
request that changed it, the request that ran out of memory (-1), and
each region the allocator obtained: the request, its size and its base
(the address the request that made it got: nothing else fit before the
region came, so BFC's best fit takes the new region's one chunk, from
its low end), with the driver's view of that address
(cuMemGetAddressRange: the base and size of the allocation holding it).

With --requests DIR, also DIR/<trace>.requests.csv: one row a request,
the address the buffer got (an alloc) or gave back (a free) and
bytes_in_use, pool_bytes and largest_free_block_bytes after it, so the
chunk every request got is known (its size is the change of
bytes_in_use).

A delete() can return before the allocator has the chunk back (PJRT
frees on another thread): a few of each run's frees then landed a request
or more late (2026-12-01: 2 to 12 a run).  So after every delete the
replay waits (up to WAIT_S) until bytes_in_use drops, and counts the
frees that never did ("late_frees").

Regions are never given back while the process lives, so each trace
should run in a process of its own to start from an empty pool.

usage: jax_replay.py [--requests DIR] TRACE.csv ...
"""
import ctypes
import json
import os
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import replayfile  # noqa: E402  (validate/replayfile.py)


class Driver:
    """cuMemGetAddressRange through libcuda, on JAX's (primary) context;
    every call answers None when the driver is out of reach."""

    def __init__(self):
        self.cu = None
        try:
            cu = ctypes.CDLL("libcuda.so.1")
            ctx = ctypes.c_void_p()
            dev = ctypes.c_int()
            if cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(dev), 0):
                return
            if cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev):
                return
            if cu.cuCtxSetCurrent(ctx):
                return
            self.cu = cu
        except OSError:
            pass

    def range_of(self, ptr):
        if self.cu is None:
            return None
        base = ctypes.c_uint64()
        size = ctypes.c_size_t()
        rc = self.cu.cuMemGetAddressRange_v2(
            ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
        return [base.value, size.value] if rc == 0 else ["error", rc]


WAIT_S = 0.5


def wait_freed(dev, before):
    """Waits until bytes_in_use is below before; False after WAIT_S."""
    end = time.monotonic() + WAIT_S
    while (dev.memory_stats() or {}).get("bytes_in_use", 0) >= before:
        if time.monotonic() > end:
            return False
        time.sleep(0.0002)
    return True


def replay(path, host, drv, reqlog):
    dev = jax.devices()[0]
    late = 0
    live = {}
    events = []
    regions = []
    req = 0
    oom = -1
    last_pool = (dev.memory_stats() or {}).get("pool_bytes", 0)
    out = None
    if reqlog:
        out = open(reqlog, "w", newline="")
        out.write("request,action,size,addr,bytes_in_use,pool_bytes,"
                  "largest_free_block_bytes\n")
    for row in replayfile.trace_requests(path):
        act = row["action"]
        ptr = 0
        n = 0
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
            ptr = x.unsafe_buffer_pointer()
            live[int(row["addr"])] = x
        else:
            x = live.pop(int(row["addr"]), None)
            if x is not None:
                ptr = x.unsafe_buffer_pointer()
                n = x.nbytes
                before = (dev.memory_stats() or {}).get("bytes_in_use", 0)
                x.delete()
                if before and not wait_freed(dev, before):
                    late += 1
        st = dev.memory_stats() or {}
        pool = st.get("pool_bytes", 0)
        if pool != last_pool:
            events.append([req, pool - last_pool])
            if pool > last_pool and act == "alloc":
                regions.append({"request": req,
                                "size": pool - last_pool,
                                "base": ptr,
                                "driver": drv.range_of(ptr)})
            last_pool = pool
        if out:
            out.write("%d,%s,%d,%d,%d,%d,%d\n" % (
                req, act, n, ptr, st.get("bytes_in_use", 0), pool,
                st.get("largest_free_block_bytes", 0)))
        req += 1
    if out:
        out.close()
    st = dev.memory_stats() or {}
    for x in live.values():
        x.delete()
    return {"events": events, "oom": oom, "stats": st, "regions": regions,
            "late_frees": late}


def main(argv):
    reqdir = None
    if len(argv) >= 2 and argv[0] == "--requests":
        reqdir = argv[1]
        argv = argv[2:]
    print(json.dumps({"jax": jax.__version__,
                      "preallocate": os.environ.get(
                          "XLA_PYTHON_CLIENT_PREALLOCATE", ""),
                      "fraction": os.environ.get(
                          "XLA_PYTHON_CLIENT_MEM_FRACTION", ""),
                      "platform": jax.devices()[0].client.platform_version}),
          flush=True)
    biggest = 0
    for p in argv:
        for row in replayfile.trace_requests(p):
            if row["action"] == "alloc":
                biggest = max(biggest, int(row["size"]))
    host = np.zeros(biggest, np.uint8)
    drv = Driver()
    for p in argv:
        log = None
        if reqdir:
            log = os.path.join(reqdir, os.path.basename(p).rsplit(".", 1)[0]
                               + ".requests.csv")
        out = {"trace": p}
        out.update(replay(p, host, drv, log))
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
