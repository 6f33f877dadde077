"""Snapshot pickles of private-pool programs (issue 15), for memsim's pickle
reader: python3 tests/recorder/pool_snapshots.py VARIANT OUT.pickle
The workloads are those of tests/recorder/pools.py; VARIANT picks where the
history begins (start: before anything; late: part way, with the peaks and
counters reset there) and where the snapshot is dumped (end of the
workload, or live: while the graphs / the MemPool still hold memory).
Prints memory_stats at the dump (the figures the replay must give)."""
import sys

import torch

GiB = 1 << 30


def history():
    torch.cuda.memory._record_memory_history(
        enabled="all", context=None, stacks="python", max_entries=10**6)
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()


def dump(out):
    torch.cuda.synchronize()
    s = torch.cuda.memory_stats()
    print("stats %s\t%d\t%d\t%d\t%d\t%d\t%d" % (
        out, s["allocated_bytes.all.peak"], s["reserved_bytes.all.peak"],
        s["segment.all.allocated"], s["segment.all.freed"],
        s["allocated_bytes.all.current"], s["reserved_bytes.all.current"]),
        flush=True)
    torch.cuda.memory._dump_snapshot(out)
    torch.cuda.memory._record_memory_history(enabled=None)


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(),
        torch.nn.Linear(4096, 4096), torch.nn.GELU(),
        torch.nn.Linear(4096, 1000)).cuda()


def graph(out, late, live):
    if not late:
        history()
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
    if late:
        history()
    x2 = torch.randn(8, 1024, device="cuda")
    with torch.no_grad():
        model(x2)
    g2 = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g2, pool=g.pool()):
        y2 = model(x2)
    for i in range(3):
        g2.replay()
        outs.append(y2.sum(dim=1))
    if live:
        dump(out)
        return
    torch.cuda.synchronize()
    del g, y
    z = torch.randn(256, 4096, device="cuda")
    del g2, y2
    torch.cuda.empty_cache()
    w = torch.randn(512, 4096, device="cuda") @ z.t()
    del w, z, outs
    dump(out)


def mempool(out, late, live):
    if not late:
        history()
    torch.manual_seed(0)
    a = torch.randn(1024, 1024, device="cuda")
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        p1 = torch.randn(3000, 1000, device="cuda")
        p2 = torch.randn(100, 100, device="cuda")
        t = p1 * 2
        p3 = t.sum(dim=0)
        del t
    if late:
        history()
    b = torch.randn(2000, 1000, device="cuda")
    c = a @ a
    with torch.cuda.use_mem_pool(pool):
        p4 = torch.randn(2000, 1000, device="cuda")
        p5 = torch.empty(30 << 20, dtype=torch.uint8, device="cuda")
    if live:
        del p1, c
        d = torch.randn(2500, 1000, device="cuda")  # p1's block would fit
        dump(out)
        return
    del p1, p2, p3, p4, p5, c
    torch.cuda.synchronize()
    del pool
    torch.cuda.empty_cache()
    d = torch.randn(4000, 1000, device="cuda")
    del a, b, d
    dump(out)


def compiled(out, late, live):
    if not late:
        history()
    torch.manual_seed(0)
    model = torch.compile(mlp().eval(), mode="reduce-overhead")
    with torch.no_grad():
        for i in range(6):
            if late and i == 3:
                history()
            y = model(torch.randn(64, 1024, device="cuda"))
            r = y.sum().item()
    dump(out)


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    w, _, how = name.partition("_")
    {"graph": graph, "mempool": mempool, "compiled": compiled}[w](
        out, "late" in how, "live" in how)
