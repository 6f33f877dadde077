import torch

keep = torch.arange(256, device="cuda") < 10
mask = torch.tensor([True, False, False, True] * 64, device="cuda")
x = torch.randn(256, device="cuda", requires_grad=True)
(-x).masked_select(mask).sum().backward()
y = torch.randn(256, 64, device="cuda")[keep]
