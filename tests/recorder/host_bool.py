# tests/recorder_programs.sh: memsim record --fake, torch.equal and
# torch.allclose of GPU tensors (values.host_bool).
import torch
a = torch.randn(64, 32, device="cuda")
b = a                       # tied weights: the same tensor
c = torch.randn(64, 32, device="cuda")
d = torch.zeros(64, 32, device="cuda")
print("same", torch.equal(a, b), torch.equal(a, a.view(64, 32)))
print("known", torch.equal(d, torch.zeros(64, 32, device="cuda")),
      torch.allclose(d, d + 1e-9))
print("other", torch.equal(a, c), torch.equal(a, a[:, :16]))
