# x[mask] with a bool mask on the GPU: index's make_info takes
# mask.nonzero() (expandTensors) before the result, index's backward
# (index_put_ with accumulate) takes it again before its linear index,
# and x[mask] = values (not one element) takes it in index_put_'s
# make_info.  A mask of known values (the diagonal's complement: 4032 of
# 4096) and one of unknown values (randn > 0: one half, 2048, mask:random).
import torch

x = torch.randn(64, 64, device="cuda", requires_grad=True)
mask = ~torch.eye(64, dtype=torch.bool, device="cuda")
y = x[mask]
y.sum().backward()
z = torch.randn(64, 64, device="cuda")
sel = z[z > 0]
with torch.no_grad():
    x[torch.eye(64, dtype=torch.bool, device="cuda")] = torch.ones(
        64, device="cuda")
