# Values memsim record --fake knows exactly (traces/memsim_record/known.py)
# and the ones it assumes; tests/recorder_known.sh compares the output.
import torch
dev = "cuda"
u = torch.randint(0, 10, (3,), device=dev)          # unknown values
L, B = torch.long, torch.bool
print((torch.zeros(3, dtype=L, device=dev) * u).sum().item())
print((torch.full((3,), False, device=dev) & (u > 5)).any().item())
print((torch.full((3,), True, device=dev) | (u > 5)).all().item())
print((torch.ones(2, 3, dtype=L, device=dev) * 3 + 2).sum().item())
print(torch.where(torch.ones(3, dtype=B, device=dev),
                  torch.full((3,), 2.5, device=dev), u.float()).max().item())
print((1 - torch.ones(4, dtype=L, device=dev)).eq(0).all().item())
a = torch.zeros(4, dtype=L, device=dev)
a[1] = 5                       # a write through a view: exact (values.py)
print(a.max().item())
b = torch.zeros(4, device=dev)
b.add_(3)                      # in place, known result
print(b.max().item())
c = torch.ones(3, device=dev)
c.mul_(u.float())              # in place, unknown operand
print(c.sum().item())
print((torch.full((2,), 7, device=dev) / 2).min().item())
print(torch.full((2,), 1 / 3, dtype=torch.bfloat16, device=dev).max().item())
print((torch.tensor(3, device=dev) + 1).item())
print(bool(u.max() == 0))
steps = [torch.zeros((), device=dev)]
torch._foreach_add_(steps, 2)  # a list written in place: exact (values.py)
print(steps[0].item())
t = torch.zeros(3, device=dev)
t.data = torch.full((3,), 5.0, device=dev)   # another storage: its values
print(t.max().item())
# the straight-through estimator t + (1. - t).detach(): 1 where t is
# unknown (native-sparse-attention's gates, then asserted); against
# another tensor, unknown (the assumption: False)
p = torch.rand(2, 3, device=dev)
print(bool(((p + (1. - p).detach()) == 1.).all()))
print(bool((((1. - p).detach() + p) == 1.).all()))
print(bool(((p + (1. - torch.rand(2, 3, device=dev)).detach()) == 1.).all()))
