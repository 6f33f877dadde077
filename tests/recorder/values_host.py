# tests/recorder_values.sh: memsim record --fake, values.py
# Values that cross to the host (values.py's rules).
import torch
n = 10
sizes = [1024 * (k + 1) for k in range(n)]
i = int(torch.empty(1, device="cuda").uniform_(0, 1).item() * n)
a = torch.empty(sizes[i], device="cuda")
r = torch.linspace(0, 3.0, 7, device="cuda")[4].item()
b = torch.empty(int(r * 1000), device="cuda")
j = torch.arange(2, 20, 3, device="cuda")[-1].item()
c = torch.empty(j, dtype=torch.uint8, device="cuda")
k = torch.randint(3, 9, (), device="cuda").item()
d = torch.empty(k, dtype=torch.uint8, device="cuda")
m = torch.randn(5, 7, device="cuda").argmax(dim=1)[2].item()
print("values", i, r, j, k, m)
loss = torch.randn(8, device="cuda").pow(2).mean()
print(f"fmt {loss:.3f} {torch.linspace(0, 1, 5, device='cuda')[1]:.2f}")
