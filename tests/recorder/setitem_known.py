# One-hot class targets as yolov7's ComputeLossOTA builds them: a tensor
# of one known value (full_like) written at indices (t[range(n), cls] =
# cp), then selected by its nonzero elements: n of 4n.
import torch

n = 1000
x = torch.randn(n, 4, device="cuda")
c = (torch.arange(n, device="cuda") * 7) % 4
t = torch.full_like(x, 0.0, device="cuda")
t[range(n), c] = 1.0
y = x[t != 0]
print(y.shape[0], t.sum().item())
