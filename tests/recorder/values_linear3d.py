# --values cpu: a Linear on a 3-D input that is not contiguous (at::linear's
# matmul, then the bias added in place) keeps its output's values, so a
# boolean index by a mask of that output has the mask's own count (SAM's
# mask decoder, then MaskData.filter; the values were lost before).
import torch

torch.manual_seed(0)
lin = torch.nn.Linear(4, 1)
xc = torch.randn(8, 2, 4)
with torch.no_grad():
    ref = int((lin(xc.transpose(0, 1)) > 0).sum())    # on the CPU, real
lin.cuda()
x = xc.cuda().transpose(0, 1)                          # not contiguous
with torch.no_grad():
    y = lin(x)
keep = (y > 0).flatten()
z = torch.arange(16, device="cuda")[keep]
print("linear3d", z.shape[0], ref)
