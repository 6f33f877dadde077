"""A sparse COO tensor of values that require grad (PEFT's SHiRA delta
weight, torch.sparse_coo_tensor(indices, w * scale)), detached and used
(tests/recorder_sparse.sh)."""
import torch

i = torch.tensor([[0, 1], [1, 0]], device="cuda")
w = torch.ones(2, device="cuda", requires_grad=True)
d = torch.sparse_coo_tensor(i, w * 2.0, (4, 4))
before = torch.cuda.memory_allocated()
e = d.detach()
print("detach", e.layout, e._nnz(), e.requires_grad,
      torch.cuda.memory_allocated() - before)
print("dense", e.to_dense().sum().item())
