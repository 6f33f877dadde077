# The rank of a true item among all scores, as KnowledgeGraphEmbedding's
# test_step (codes/model.py) takes it: argsort's rows are permutations,
# so a row compared with one index has exactly one element equal, and
# its nonzero() one row (the program asserts it).
import torch

score = torch.randn(4, 5000, device="cuda")
pos = torch.randint(0, 5000, (4,), device="cuda")
argsort = torch.argsort(score, dim=1, descending=True)
rows = [(argsort[i, :] == pos[i]).nonzero().size(0) for i in range(4)]
print("argsort rows", rows)
# sort's indices (stable), the whole of them against a column of values:
# one a row
_, idx = torch.sort(score, dim=-1, stable=True)
print("sort column", (idx == pos[:, None]).nonzero().size(0))
# the value on the left
print("left", (pos[1] == argsort[1]).nonzero().size(0))
# argsort along dim 0: its rows are no permutations, no bound
a0 = torch.argsort(score, dim=0)
print("dim0 bounded", (a0[0, :] == 3).nonzero().size(0) <= 1)
# a write into the indices ends the bound
argsort[0, :7] = 3
print("written bounded", (argsort[0, :] == 3).nonzero().size(0) <= 1)
