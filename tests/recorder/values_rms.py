# tests/recorder_values.sh: --values cpu through fake.py's fused rms_norm
import torch, torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(4, 16, device="cuda", requires_grad=True)
w = torch.randn(16, device="cuda", requires_grad=True)
y = F.rms_norm(x, (16,), w, 1e-6)
g = torch.randn(4, 16, device="cuda")
y.backward(g)
print("y", y.sum().item(), "gx", x.grad.sum().item(), "gw", w.grad.sum().item())
