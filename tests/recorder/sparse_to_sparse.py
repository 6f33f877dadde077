"""A dense adjacency made sparse on the device (to_sparse), multiplied
by torch.sparse.mm, as a GCN's (tests/recorder_sparse.sh); DEV=cpu runs
it on the host."""
import os
import torch

dev = os.environ.get("DEV", "cuda")
torch.manual_seed(0)
a = torch.zeros(16, 16)
a[torch.arange(16), (torch.arange(16) * 5) % 16] = 1.0
a[torch.arange(16), (torch.arange(16) + 1) % 16] = 0.5
s = a.to(dev).to_sparse()
x = torch.arange(48, dtype=torch.float32).view(16, 3).to(dev)
y = torch.sparse.mm(s, x)
print("nnz", s._nnz(), s.is_coalesced(), tuple(s._indices().shape))
print("y", y.sum().item(), y[3].tolist())
