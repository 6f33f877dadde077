# tests/recorder_values.sh: memsim record --fake, values.py
# A top-2-of-8 mixture of experts layer, routed as usual: topk of the
# gate's softmax, then per expert torch.where / nonzero / boolean masks.
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
T, D, E, K = 64, 32, 8, 2
torch.manual_seed(0)
gate = nn.Linear(D, E).cuda()
experts = nn.ModuleList(nn.Linear(D, 4 * D) for _ in range(E)).cuda()
x = torch.randn(T, D, device="cuda")
w, idx = gate(x).softmax(-1).topk(K, dim=-1)
out = torch.zeros(T, 4 * D, device="cuda")
for e in range(E):
    if sys.argv[1:] == ["nonzero"]:
        tok = (idx == e).nonzero()[:, 0]
    else:
        tok, slot = torch.where(idx == e)
    xe = x[tok]
    out.index_add_(0, tok, experts[e](xe))
counts = F.one_hot(idx, E).sum((0, 1)).tolist()
print("counts", counts, "routed", sum(counts))
