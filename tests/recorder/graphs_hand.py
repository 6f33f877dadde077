"""A CUDA graph and MemPool scenario by hand for tests/recorder_graphs.sh
(memsim record --fake, traces/memsim_record/graphs.py): a capture on the
default stream refused, two graphs sharing a graph_pool_handle() pool,
replays, the graphs' deaths, a no_split MemPool entered once; then
    python3 graphs_hand.py values
captures an in-place add of a tensor of known value (3): after the capture
and after a replay its value is not known (the capture ran no kernel);
    python3 graphs_hand.py graphed
trains a small MLP made with torch.cuda.make_graphed_callables (its
forward and backward captured in one pool on a side stream, then replayed)
for 3 steps;
    python3 graphs_hand.py compiled
uses a MemPool, then a Linear under torch.compile(mode="reduce-overhead")
(the cudagraph trees' pool: numbered after the MemPool's)."""
import sys

import torch

MiB = 1 << 20


def empty(n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")


if sys.argv[1:] == ["values"]:
    n = torch.full((1,), 3, dtype=torch.int64, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        n.add_(1)
    print("after capture", n.item(), file=sys.stderr)
    g.replay()
    print("after replay", n.item(), file=sys.stderr)
    sys.exit(0)

if sys.argv[1:] == ["graphed"]:
    m = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 512)).cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    gm = torch.cuda.make_graphed_callables(
        m, (torch.randn(64, 512, device="cuda"),))
    for i in range(3):
        gm(torch.randn(64, 512, device="cuda")).sum().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    sys.exit(0)

if sys.argv[1:] == ["compiled"]:
    # a MemPool, then torch.compile's cudagraph trees: one numbering
    p = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(p):
        a = empty(MiB)
    m = torch.compile(torch.nn.Linear(64, 64).cuda(), mode="reduce-overhead")
    with torch.no_grad():
        for i in range(3):
            y = m(torch.randn(8, 64, device="cuda"))
    sys.exit(0)

x = empty(MiB)                          # default pool, stream 0
try:
    torch.cuda.CUDAGraph().capture_begin()
    raise SystemExit("captured on the default stream")
except RuntimeError as e:
    assert "non-default stream" in str(e), e
assert not torch.cuda.is_current_stream_capturing()
h = torch.cuda.graph_pool_handle()
g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
with torch.cuda.graph(g1, pool=h):
    assert torch.cuda.is_current_stream_capturing()
    t = x + 1                           # in the pool, freed in the capture
    y1 = t * 2                          # kept
    del t
with torch.cuda.graph(g2, pool=h):
    y2 = y1 - 1                         # t's block
assert g1.pool() == g2.pool() == h
assert not torch.cuda.is_current_stream_capturing()
for _ in range(4):
    x.fill_(3)
    g1.replay()                         # nothing allocated
    g2.replay()
del g1                                  # the pool stays g2's
del g2                                  # released; the seed and offset freed
del y1, y2
p = torch.cuda.MemPool(no_split=True)
assert p.use_count() == 1
with torch.cuda.use_mem_pool(p):
    assert p.use_count() == 2
    z = empty(3 * MiB)
assert p.use_count() == 1
del z, p
torch.cuda.empty_cache()
