"""nonzero() of a host tensor too large for a shadow moved whole to the
GPU (tests/recorder_upload_nonzero.sh): pyGAT's sparse GAT takes its
edges from `adj.nonzero()` of the dense 2708 x 2708 adjacency it moved
with `adj.cuda()`."""
import torch

n = 600                     # 360,000 elements: over SHADOW_LIMIT
a = torch.zeros(n, n)
i = torch.arange(n)
a[i, i] = 1.0               # the diagonal and one neighbour a row
a[i, (i + 1) % n] = 0.5
want = int((a != 0).sum())
g = a.cuda()
e = g.nonzero().t()
print("edges", e.shape[1], "of", want)
print("argwhere", torch.argwhere(g).shape[0])
print("first", e[:, :3].tolist())
