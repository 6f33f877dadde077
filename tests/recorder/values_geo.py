# tests/recorder_values.sh: draws until a random value crosses 0.9
import torch
n = 0
while torch.rand((), device="cuda").item() < 0.9:
    n += 1
print("draws", n)
