"""bucketize's insertion points and the masked writes that clamp them
(HistogramObserver's _upscale_histogram: `bucketize(mid_points,
boundaries, right=True) - 1`, `b[b >= bins] = bins - 1`, `b[b < 0] = 0`,
then `bincount(b, weights, minlength=bins)`, added to the histogram of
bins elements)."""
import torch
from torch.ao.quantization.observer import HistogramObserver

v = torch.rand(50, device="cuda")
b = torch.bucketize(v, torch.linspace(0, 1, 9, device="cuda"), right=True)
print("bucketize", torch.bincount(b).shape[0])
s = torch.searchsorted(torch.linspace(0, 1, 5, device="cuda"), v)
print("searchsorted", torch.bincount(s).shape[0])
b = b - 1
b[b >= 8] = 7
print("one side", torch.bincount(b.clamp(min=0)).shape[0])
b[b < 0] = 0
print("clamped", torch.bincount(b, minlength=8).shape[0])
c = torch.bucketize(v, torch.linspace(0, 1, 9, device="cuda")) - 1
c.masked_fill_(c > 3, 3)
print("masked_fill", torch.bincount(c.clamp(min=0)).shape[0])
d = torch.bucketize(v, torch.linspace(0, 1, 9, device="cuda"))
e = d.clone()
e[d >= 2] = 1               # (a mask of other elements: no bound)
print("other elements", torch.bincount(e).shape[0])
m = d >= 2
d.add_(0)
d[m] = 1                    # (a mask of d before a write: no bound)
print("written since", torch.bincount(d).shape[0])
obs = HistogramObserver().cuda()
for i in range(3):
    obs(torch.randn(64, 128, device="cuda") * (i + 1))
print("histogram", tuple(obs.histogram.shape))
