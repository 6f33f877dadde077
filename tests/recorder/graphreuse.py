"""Workloads for graph_capture_record_stream_reuse and MemPools with an
allocator of their own (issue 15), recorded on the H200 with `memsim
record --gpu` (validate/device/graphreuse_device.sh):
    python3 tests/recorder/graphreuse.py reuse|ownpool|delpool|delown|owncap
reuse: a CUDA graph capture in which 12 MiB blocks are used on a side
stream (record_stream) and freed: x after the side stream rejoined the
capture stream, y before it did.  Run it with PYTORCH_CUDA_ALLOC_CONF=
graph_capture_record_stream_reuse:True and :False.
ownpool: a torch.cuda.MemPool whose allocator is a CUDAPluggableAllocator
(MYALLOC_SO: tests/recorder/myalloc.c built as a shared library), entered
twice, empty_cache while it lives, deleted, empty_cache.
delpool, delown: a MemPool (plain, or with such an allocator) deleted while
a free unsplit 12 MiB segment waits in the default pool: ~MemPool's
emptyCache(pool) frees the pool's segments only, and the next 12 MiB
takes the waiting one.
owncap: under a cap of 200 MiB (set_per_process_memory_fraction), 120 MiB
in such a pool, then 100 MiB in the default pool: out of memory if the
pool's segments count against the cap.
At exit it prints the allocator's own figures (memory_stats)."""
import os
import sys

import torch

MiB = 1 << 20


def stats(tag):
    s = torch.cuda.memory_stats()
    print("%s: max_allocated %d max_reserved %d segments allocated %d "
          "freed %d current %d; now allocated %d reserved %d; "
          "device alloc %d free %d; syncs %d" % (
              tag, s["allocated_bytes.all.peak"],
              s["reserved_bytes.all.peak"], s["segment.all.allocated"],
              s["segment.all.freed"], s["segment.all.current"],
              s["allocated_bytes.all.current"],
              s["reserved_bytes.all.current"], s["num_device_alloc"],
              s["num_device_free"], s["num_sync_all_streams"]),
          file=sys.stderr)


def segments(tag):
    for seg in torch.cuda.memory._snapshot()["segments"]:
        print("%s: segment %d size %d pool %s type %s expandable %s "
              "allocated %d" % (tag, seg["address"], seg["total_size"],
                                seg.get("segment_pool_id"),
                                seg.get("segment_type"),
                                seg.get("is_expandable"),
                                seg["allocated_size"]), file=sys.stderr)


def empty(n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")


def reuse():
    n = 12 * MiB
    side = torch.cuda.Stream()
    keep = empty(n)  # default pool
    keep.fill_(0)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cs = torch.cuda.current_stream()
        x = empty(n)
        x.fill_(1)
        side.wait_stream(cs)
        with torch.cuda.stream(side):
            x.add_(1)        # used on the side stream, nothing allocated
        x.record_stream(side)
        cs.wait_stream(side)
        del x                # freed after the join: reusable at once
        y = empty(n)
        y.fill_(2)
        side.wait_stream(cs)
        with torch.cuda.stream(side):
            y.add_(1)
        y.record_stream(side)
        del y                # freed before the join
        z = empty(n)         # y not reusable yet
        z.fill_(3)
        cs.wait_stream(side)
        w = empty(n)         # joined: y reusable
        w.fill_(4)
        out = z + w
    segments("reuse in capture")
    g.replay()
    torch.cuda.synchronize()
    a = empty(n)             # process_events: deferred frees come here
    a.fill_(5)
    del z, w, out
    g.reset()
    del g
    torch.cuda.empty_cache()
    b = empty(3 * n)
    b.fill_(6)
    del a, b, keep
    torch.cuda.synchronize()


def own_allocator():
    return torch.cuda.memory.CUDAPluggableAllocator(
        os.environ["MYALLOC_SO"], "my_malloc", "my_free")


def ownpool():
    torch.manual_seed(0)
    alloc = own_allocator()
    a = torch.randn(1024, 1024, device="cuda")  # default pool
    pool = torch.cuda.MemPool(alloc.allocator())
    with torch.cuda.use_mem_pool(pool):
        p1 = torch.randn(3000, 1000, device="cuda")  # large
        p2 = torch.randn(100, 100, device="cuda")    # small
        t = p1 * 2                                   # freed inside
        p3 = t.sum(dim=0)
        del t
    b = torch.randn(2000, 1000, device="cuda")       # default pool
    c = a @ a
    del c
    torch.cuda.empty_cache()    # the pool is in use: its segments stay
    with torch.cuda.use_mem_pool(pool):
        p4 = torch.randn(2000, 1000, device="cuda")  # reuses t's block
        p5 = torch.empty(30 * MiB, dtype=torch.uint8, device="cuda")
    segments("ownpool live")
    del p1, p2, p3, p4, p5
    torch.cuda.synchronize()
    del pool
    segments("ownpool deleted")
    torch.cuda.empty_cache()
    d = torch.randn(4000, 1000, device="cuda")
    del a, b, d
    torch.cuda.synchronize()


def delpool(own=False):
    f = empty(12 * MiB)      # default pool: a 12 MiB segment
    f.fill_(0)
    k = empty(4 * MiB)       # default pool: a 20 MiB segment, split
    pool = torch.cuda.MemPool(own_allocator().allocator() if own else None)
    with torch.cuda.use_mem_pool(pool):
        p = empty(30 * MiB)
        p.fill_(1)
        q = empty(MiB // 2)  # small: a 2 MiB segment
        q.fill_(1)
    del f                    # free and unsplit in the default pool
    del p, q
    torch.cuda.synchronize()
    del pool                 # ~MemPool: releasePool, emptyCache(pool)
    segments("delpool deleted")
    g = empty(12 * MiB)      # f's segment
    g.fill_(2)
    del g, k
    torch.cuda.synchronize()


def owncap():
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(200 * MiB / total)
    alloc = own_allocator()
    pool = torch.cuda.MemPool(alloc.allocator())
    with torch.cuda.use_mem_pool(pool):
        p = empty(120 * MiB)
    try:
        q = empty(100 * MiB)
        print("owncap: 100 MiB in the default pool fit", file=sys.stderr)
        del q
    except torch.OutOfMemoryError as e:
        print("owncap: out of memory: %s" % str(e).split(".")[0],
              file=sys.stderr)
    del p
    torch.cuda.synchronize()


if __name__ == "__main__":
    {"reuse": reuse, "ownpool": ownpool, "owncap": owncap,
     "delpool": delpool, "delown": lambda: delpool(True)}[sys.argv[1]]()
    stats(sys.argv[1])
