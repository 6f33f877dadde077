"""c - t frees t when its last reference goes (tests/recorder_known_free.sh).

    y = (1 - a * b) * b

a * b (the rsub's t) is freed as soon as 1 - it is made, before the
product: its only reference was the expression's.  Known.straight notes
c - t with t for the straight-through estimator t + (c - t).detach();
the note must not keep t alive.  Then the estimator itself, whose value
is still known: 1.0.
"""
import torch

a = torch.rand(8, device="cuda")
b = torch.rand(8, device="cuda")
y = (1 - a * b) * b
del y
t = torch.rand(8, device="cuda")
print((t + (1. - t).detach()).max().item())
