# tests/recorder_sparse.sh: a 2-layer GCN on a sparse COO adjacency of 8
# nodes: 10 edges, 3 of them repeated, both directions and self loops: 28
# entries, 22 distinct.  argv[1]: "cpu" (built and coalesced on the host,
# moved to the GPU), "cuda" (indices known, coalesced on the GPU) or
# "random" (indices of unknown values, coalesced on the GPU).
import sys
import torch
import torch.nn.functional as F
where = sys.argv[1]
n = 8
src = torch.tensor([0, 1, 1, 2, 3, 3, 5, 6, 0, 7])
dst = torch.tensor([1, 2, 2, 3, 4, 4, 6, 7, 1, 0])
loops = torch.arange(n)
idx = torch.stack([torch.cat([src, dst, loops]), torch.cat([dst, src, loops])])
dev = "cpu" if where == "cpu" else "cuda"
idx = idx.to(dev)
if where == "random":
    idx = torch.randint(0, n, (2, 28), device=dev)
adj = torch.sparse_coo_tensor(idx, torch.ones(28, device=dev), (n, n))
adj = adj.coalesce()
deg = torch.sparse.sum(adj, 1).to_dense() if where == "cpu" else None
i, v = adj._indices(), adj._values()
if deg is not None:
    adj = torch.sparse_coo_tensor(i, v / deg[i[0]], (n, n)).coalesce()
adj = adj.to("cuda")
print("nnz", adj._nnz(), "indices", tuple(adj._indices().shape),
      adj._indices().dtype, "values", tuple(adj._values().shape))
x = torch.randn(n, 6, device="cuda")
y = torch.randint(0, 3, (n,), device="cuda")
w1 = torch.randn(6, 4, device="cuda", requires_grad=True)
w2 = torch.randn(4, 3, device="cuda", requires_grad=True)
opt = torch.optim.Adam([w1, w2])
for _ in range(2):
    opt.zero_grad()
    h = F.relu(torch.sparse.mm(adj, x @ w1))
    loss = F.cross_entropy(torch.sparse.mm(adj, h @ w2), y)
    loss.backward()
    opt.step()
print("sum", tuple(torch.sparse.sum(adj).shape))
