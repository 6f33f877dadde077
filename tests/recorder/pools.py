"""Private-pool workloads for `memsim record --gpu` (issue 15):
    python3 tests/recorder/pools.py graph|mempool|compiled
graph: a small MLP captured in a CUDA graph (torch.cuda.graph, warm-up on a
side stream as PyTorch's documentation does), replayed 6 times with new
inputs, a second graph sharing its pool, both destroyed, empty_cache.
mempool: a torch.cuda.MemPool entered twice with use_mem_pool for small and
large tensors, some freed inside, default-pool work in between, the pool
deleted, empty_cache.
compiled: the MLP under torch.compile(mode="reduce-overhead"), 6 calls.
At exit it prints the allocator's own figures (memory_stats).

Each workload takes at(point), which tests/recorder/pool_snapshots.py
gives to take its snapshot pickles of the same programs; here it does
nothing.  It is called at "start" (before anything), "late" (part way:
where a history that starts late begins), "live" (while the graphs or the
MemPool still hold memory: a true return ends the workload there, after
"end") and "end" (where a snapshot of the whole workload is dumped)."""
import sys

import torch


def stats(tag):
    s = torch.cuda.memory_stats()
    print("%s: max_allocated %d max_reserved %d segments allocated %d "
          "freed %d current %d; now allocated %d reserved %d" % (
              tag, s["allocated_bytes.all.peak"],
              s["reserved_bytes.all.peak"], s["segment.all.allocated"],
              s["segment.all.freed"], s["segment.all.current"],
              s["allocated_bytes.all.current"],
              s["reserved_bytes.all.current"]), file=sys.stderr)


def nothing(point):
    return False


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(),
        torch.nn.Linear(4096, 4096), torch.nn.GELU(),
        torch.nn.Linear(4096, 1000)).cuda()


def graph(at=nothing):
    at("start")
    torch.manual_seed(0)
    model = mlp().eval()
    x = torch.randn(64, 1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        y = model(x)
    outs = []
    for i in range(6):
        x.copy_(torch.randn(64, 1024, device="cuda"))
        g.replay()
        outs.append(y.argmax(dim=1))
    at("late")
    # a second graph (batch 8 of the same model) sharing g's pool
    x2 = torch.randn(8, 1024, device="cuda")
    with torch.no_grad():
        model(x2)
    g2 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g2, pool=g.pool()):
        y2 = model(x2)
    for i in range(3):
        g2.replay()
        outs.append(y2.sum(dim=1))
    if at("live"):
        at("end")
        return
    torch.cuda.synchronize()
    del g, y
    z = torch.randn(256, 4096, device="cuda")
    del g2, y2
    torch.cuda.empty_cache()
    w = torch.randn(512, 4096, device="cuda") @ z.t()
    del w, z, outs
    at("end")
    torch.cuda.synchronize()


def mempool(at=nothing):
    at("start")
    torch.manual_seed(0)
    a = torch.randn(1024, 1024, device="cuda")  # default pool
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        p1 = torch.randn(3000, 1000, device="cuda")  # large
        p2 = torch.randn(100, 100, device="cuda")    # small
        t = p1 * 2                                   # freed inside
        p3 = t.sum(dim=0)
        del t
    at("late")
    b = torch.randn(2000, 1000, device="cuda")       # default pool
    c = a @ a
    with torch.cuda.use_mem_pool(pool):
        p4 = torch.randn(2000, 1000, device="cuda")  # reuses t's block
        p5 = torch.empty(30 << 20, dtype=torch.uint8, device="cuda")
    if at("live"):
        del p1, c
        d = torch.randn(2500, 1000, device="cuda")  # p1's block would fit
        at("end")
        return
    del p1, p2, p3, p4, p5, c
    torch.cuda.synchronize()
    del pool
    torch.cuda.empty_cache()
    d = torch.randn(4000, 1000, device="cuda")
    del a, b, d
    at("end")
    torch.cuda.synchronize()


def compiled(at=nothing):
    at("start")
    torch.manual_seed(0)
    model = torch.compile(mlp().eval(), mode="reduce-overhead")
    with torch.no_grad():
        for i in range(6):
            if i == 3:
                at("late")
            y = model(torch.randn(64, 1024, device="cuda"))
            r = y.sum().item()
    at("end")
    del y, r
    torch.cuda.synchronize()


WORKLOADS = {"graph": graph, "mempool": mempool, "compiled": compiled}

if __name__ == "__main__":
    WORKLOADS[sys.argv[1]]()
    stats(sys.argv[1])
