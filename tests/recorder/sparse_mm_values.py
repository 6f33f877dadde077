"""The values of a sparse COO matrix by a dense one on the GPU
(tests/recorder_sparse_mm_values.sh): pygcn's GraphConvolution,
`torch.spmm(adj, support)`, then a loss read with .item()."""
import torch

torch.manual_seed(0)
n, f = 50, 8
i = torch.randint(0, n, (2, 200))
adj = torch.sparse_coo_tensor(i, torch.rand(200), (n, n)).coalesce()
x = torch.randn(n, f)
want = torch.spmm(adj, x)
want2 = torch.sparse.addmm(x[:, :1].expand(n, f).contiguous(), adj, x,
                           beta=0.5, alpha=2.0)
g, gx = adj.cuda(), x.cuda()
out = torch.spmm(g, gx)
print("spmm", torch.allclose(out.cpu(), want))
out2 = torch.sparse.addmm(gx[:, :1].expand(n, f).contiguous(), g, gx,
                          beta=0.5, alpha=2.0)
print("addmm", torch.allclose(out2.cpu(), want2))
print("sum %.4f %.4f" % (out.sum().item(), want.sum().item()))
# the parts of the sparse tensor, as pyGAT's backward reads them
e = g._indices()[0, :] * n + g._indices()[1, :]
print("indices", e.tolist() == (adj._indices()[0] * n + adj._indices()[1]).tolist())
print("values", torch.equal(g._values().cpu(), adj._values()))
