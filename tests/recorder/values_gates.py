# tests/recorder_gates.sh: a sparsely-gated mixture of experts' gates
# (zeros.scatter of the top-k gate values at the routed experts) and the
# support check of a torch.distributions Normal, under --fake
import torch
from torch.distributions.normal import Normal
x = torch.randn(6, 8, device="cuda")
logits = torch.softmax(x, 1)
top, idx = logits.topk(3, dim=1)
gates = torch.zeros_like(logits).scatter(1, idx[:, :2], top[:, :2])
nz = torch.nonzero(gates)
print("gates", nz.shape[0], (gates > 0).sum(0).tolist())
n = Normal(torch.zeros(1, device="cuda"), torch.ones(1, device="cuda"))
print("cdf", tuple(n.cdf(x / 2).shape))
