# tests/recorder_values.sh: memsim record --fake, values.py
# The GPU the default device (torch.set_default_device("cuda"), as
# DeepSeek-V3's inference model.py runs): host values are still made on
# the host.  Its MoE layer counts each expert's tokens with bincount, then
# takes them with torch.where.
import torch
import torch.nn as nn
torch.set_default_device("cuda")
T, D, E, K = 64, 32, 8, 2
torch.manual_seed(0)
gate = nn.Linear(D, E)
experts = nn.ModuleList(nn.Linear(D, 4 * D) for _ in range(E))
x = torch.randn(T, D)
w, idx = gate(x).softmax(-1).topk(K, dim=-1)
out = torch.zeros(T, 4 * D)
counts = torch.bincount(idx.flatten(), minlength=E).tolist()
for e in range(E):
    if counts[e] == 0:
        continue
    tok, slot = torch.where(idx == e)
    out[tok] += experts[e](x[tok]) * w[tok, slot, None]
print("counts", counts, "steps", torch.arange(3).tolist(),
      "drawn", len(torch.multinomial(torch.rand(4), 2).tolist()))
