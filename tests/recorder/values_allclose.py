# tests/recorder_allclose.sh: torch.allclose of GPU tensors under --fake
import torch
a = torch.randn(64, 64, device="cuda")
b = a @ torch.eye(64, device="cuda")
x = torch.arange(4.0, device="cuda")
print("close", torch.allclose(a, b, atol=1e-5),
      torch.allclose(x, x + 1), torch.allclose(x, x + 1e-9),
      torch.allclose(x, x + 0.5, 0.0, 0.5))
