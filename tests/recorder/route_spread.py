# A top-1 router with a per-sequence capacity, as Switch Transformers'
# (SwitchTransformersTop1Router: one_hot of the argmax, cumsum over the
# sequence, kept while <= expert_capacity), then each expert's tokens
# (SwitchTransformersExperts: torch.where of its column).
import torch
torch.manual_seed(0)
B, S, D, E, CAP = 8, 80, 64, 8, 32
gate = torch.nn.Linear(D, E, device="cuda")
w = torch.randn(E, D, 4 * D, device="cuda")
x = torch.randn(B, S, D, device="cuda")
probs = gate(x).softmax(-1)
mask = torch.nn.functional.one_hot(probs.argmax(-1), E)
mask = mask * (torch.cumsum(mask, dim=-2) <= CAP)
routed = 0
for e in range(E):
    rows = torch.where(mask[:, :, e].bool())
    h = x[rows] @ w[e]
    routed += h.shape[0]
print("routed", routed, "of", B * S)
