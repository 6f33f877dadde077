# Liger-Kernel's cross_entropy_forward checks its targets with
# `(target * target_mask).max() < V` (target_mask = target !=
# ignore_index): a product of a range and a mask's range, [0, V - 1]
# times a mask decided True everywhere ([1, 1]) or of unknown values
# ([0, 1]), the mask first or second.  (It was answered by --item-bool, false: "Target 128255 is
# out of bounds. Expected < 128256".)
import torch
V = 128256
target = torch.randint(V, (4096, 1), dtype=torch.long, device="cuda").squeeze(1)
target_mask = target != -100
assert (target * target_mask).max() < V, f"Target {target.max()} is out of bounds. Expected < {V}"
assert (target * target_mask).min() >= 0
m2 = torch.rand(4096, device="cuda") > 0.5
print(bool((target * m2).max() < V), bool((target * m2).min() >= 0))
# the mask first
print(bool((target_mask * target).max() < V), bool((m2 * target).min() >= 0))
