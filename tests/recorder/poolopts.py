"""Workloads for the private-pool options of issue 15, recorded on the H200
with `memsim record --gpu` (validate/device/poolopts_device.sh):
    python3 tests/recorder/poolopts.py probe|oom_on|oom_off|nosplit_on|
        nosplit_off|checkpoint|compiled_train|compiled_train_shapes|
        compiled_infer
probe: what this PyTorch offers (MemPool's arguments, the checkpoint calls,
whether empty_cache takes a pool).
oom_on, oom_off: a MemPool(use_on_oom=True/False) holding a free 60 MiB
block, the default pool a free 30 MiB segment, then 50 MiB in the default
pool under a cap of 100 MiB (set_per_process_memory_fraction): with
use_on_oom the request takes the pool's block (setUseOnOOM,
try_mempool_fallback); whether the default pool's 30 MiB segment is freed
first says where the fallback sits in malloc.  Without it: out of memory.
nosplit_on, nosplit_off: a MemPool(no_split=True/False): two 4 MiB blocks,
two small ones, a free one reused (setNoSplit, should_split).
checkpoint: torch._C._cuda_getCheckpointState of a MemPool, its blocks
changed, then _cuda_setCheckpointPoolState (setCheckpointPoolState) and
allocations after it.
compiled_train: torch.compile(mode="reduce-overhead") of a small MLP,
forward and backward, a few steps, with an eval call between steps (on
the H200 this made no setCheckpointPoolState call).
compiled_train_shapes: the same training with two batch sizes (64 and a
short 48), so new graphs are recorded after others were replayed.
compiled_infer: the same model compiled for inference, two input shapes
alternating (re-recording).
At exit it prints the allocator's own figures (memory_stats)."""
import inspect
import sys

import torch

MiB = 1 << 20


def stats(tag):
    s = torch.cuda.memory_stats()
    print("%s: max_allocated %d max_reserved %d segments allocated %d "
          "freed %d current %d; now allocated %d reserved %d; "
          "device alloc %d free %d; syncs %d retries %d ooms %d" % (
              tag, s["allocated_bytes.all.peak"],
              s["reserved_bytes.all.peak"], s["segment.all.allocated"],
              s["segment.all.freed"], s["segment.all.current"],
              s["allocated_bytes.all.current"],
              s["reserved_bytes.all.current"], s["num_device_alloc"],
              s["num_device_free"], s["num_sync_all_streams"],
              s["num_alloc_retries"], s["num_ooms"]),
          file=sys.stderr)


def segments(tag):
    for seg in torch.cuda.memory._snapshot()["segments"]:
        print("%s: segment %d size %d pool %s allocated %d blocks %s" % (
            tag, seg["address"], seg["total_size"],
            seg.get("segment_pool_id"), seg["allocated_size"],
            [(b["size"], b["state"]) for b in seg["blocks"]]),
            file=sys.stderr)


def empty(n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")


def probe():
    print("torch", torch.__version__, file=sys.stderr)
    M = torch.cuda.MemPool
    print("MemPool.__init__", inspect.signature(M.__init__), file=sys.stderr)
    for name in ("_cuda_getCheckpointState", "_cuda_setCheckpointPoolState",
                 "_cuda_emptyCache", "_cuda_releasePool",
                 "_cuda_setUseOnOOM", "_cuda_setNoSplit"):
        f = getattr(torch._C, name, None)
        print(name, f is not None, (getattr(f, "__doc__", "") or "")[:300],
              file=sys.stderr)
    print("empty_cache", inspect.signature(torch.cuda.empty_cache),
          file=sys.stderr)
    print("MemPool attrs", [a for a in dir(M) if not a.startswith("__")],
          file=sys.stderr)


def use_on_oom(flag):
    total = torch.cuda.get_device_properties(0).total_memory
    pool = torch.cuda.MemPool(use_on_oom=flag)
    with torch.cuda.use_mem_pool(pool):
        p = empty(60 * MiB)
        p.fill_(1)
        del p            # a free 60 MiB block in the pool
    a = empty(30 * MiB)
    a.fill_(2)
    del a                # a free 30 MiB segment in the default pool
    frac = 100 * MiB / total
    # allowed_memory_maximum: the fraction times totalGlobalMem, truncated
    print("cap", int(frac * total), "total", total, file=sys.stderr)
    torch.cuda.set_per_process_memory_fraction(frac)
    try:
        b = empty(50 * MiB)  # 90 + 50 > 100: alloc_block fails
        b.fill_(3)
        segments("after b")
        del b
    except torch.OutOfMemoryError as e:
        print("oom:", str(e)[:120], file=sys.stderr)
    c = empty(8 * MiB)
    c.fill_(4)
    segments("end")
    stats("use_on_oom=%s" % flag)
    del c
    torch.cuda.set_per_process_memory_fraction(1.0)
    del pool
    stats("after del pool")


def no_split(flag):
    try:
        pool = torch.cuda.MemPool(no_split=flag)
    except TypeError as e:
        print("no no_split:", e, file=sys.stderr)
        sys.exit(3)
    keep = []
    with torch.cuda.use_mem_pool(pool):
        x = empty(4 * MiB)
        y = empty(4 * MiB)
        s1 = empty(1000)
        s2 = empty(3000)
        keep += [y, s1, s2]
        del x
        z = empty(2 * MiB)   # reuses x's block (whole, or split)
        w = empty(24 * MiB)
        del w
        v = empty(12 * MiB)  # the free 24 MiB segment, whole or split
        keep += [z, v]
    segments("end")
    stats("no_split=%s" % flag)
    del keep, y, s1, s2, z, v
    del pool
    stats("after del pool")


def checkpoint():
    dev = torch.cuda.current_device()
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        a = empty(4 * MiB)
        b = empty(4 * MiB)
        c = empty(4 * MiB)
        del b
    segments("checkpointed")
    state = torch._C._cuda_getCheckpointState(dev, pool.id)
    a_ptr, c_ptr = a.data_ptr(), c.data_ptr()
    del a, c
    with torch.cuda.use_mem_pool(pool):
        d = empty(6 * MiB)   # the pool changes after the checkpoint
        e = empty(2 * MiB)
    stale = [d.untyped_storage()._cdata, e.untyped_storage()._cdata]
    torch._C._cuda_setCheckpointPoolState(dev, state, stale, [])
    segments("restored")
    # a's and c's blocks are allocated again, owned by no tensor: as CUDA
    # graph trees do for outputs dead since, free them by pointer.
    torch._C._cuda_cudaCachingAllocator_raw_delete(c_ptr)
    with torch.cuda.use_mem_pool(pool):
        f = empty(8 * MiB)   # best fit after the restore
    g = empty(8 * MiB)       # default pool
    segments("end")
    stats("checkpoint")
    del d, e
    torch._C._cuda_cudaCachingAllocator_raw_delete(a_ptr)
    del f, g, pool
    stats("after del pool")


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, 256)).cuda()


def compiled_train():
    torch.manual_seed(0)
    m = mlp()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    f = torch.compile(m, mode="reduce-overhead")

    @torch.compile(mode="reduce-overhead")
    def evaluate(x):
        return m(x).sum()

    x = torch.randn(64, 256, device="cuda")
    for step in range(5):
        torch.compiler.cudagraph_mark_step_begin()
        loss = f(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            torch.compiler.cudagraph_mark_step_begin()
            v = evaluate(x).item()
        print("step", step, float(loss), v, file=sys.stderr)
    torch.cuda.synchronize()
    stats("compiled_train")


def compiled_train_shapes():
    """Training with two batch sizes (a short last batch, as without
    drop_last): a new shape records new graphs after others replayed."""
    torch.manual_seed(0)
    m = mlp()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    f = torch.compile(m, mode="reduce-overhead")
    xs = {64: torch.randn(64, 256, device="cuda"),
          48: torch.randn(48, 256, device="cuda")}
    for step, b in enumerate((64, 64, 64, 48, 48, 64, 48, 64)):
        torch.compiler.cudagraph_mark_step_begin()
        loss = f(xs[b]).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print("step", step, b, float(loss), file=sys.stderr)
    torch.cuda.synchronize()
    stats("compiled_train_shapes")


def compiled_infer():
    torch.manual_seed(0)
    m = mlp().eval()
    f = torch.compile(m, mode="reduce-overhead")
    xs = [torch.randn(32, 256, device="cuda"),
          torch.randn(96, 256, device="cuda")]
    outs = []
    with torch.no_grad():
        for i in (0, 0, 0, 1, 1, 1, 0, 1, 0):
            torch.compiler.cudagraph_mark_step_begin()
            y = f(xs[i])
            outs.append(y.sum().item())
    torch.cuda.synchronize()
    print("outs", outs, file=sys.stderr)
    stats("compiled_infer")


def main():
    w = sys.argv[1] if len(sys.argv) > 1 else ""
    table = {"probe": probe,
             "oom_on": lambda: use_on_oom(True),
             "oom_off": lambda: use_on_oom(False),
             "nosplit_on": lambda: no_split(True),
             "nosplit_off": lambda: no_split(False),
             "checkpoint": checkpoint,
             "compiled_train": compiled_train,
             "compiled_train_shapes": compiled_train_shapes,
             "compiled_infer": compiled_infer}
    if w not in table:
        sys.exit("usage: poolopts.py " + "|".join(table))
    table[w]()


if __name__ == "__main__":
    main()
