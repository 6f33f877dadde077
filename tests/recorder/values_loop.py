# tests/recorder_values.sh: memsim record --fake, values.py
# Stops when a value crosses a threshold: the values are too many for
# --values rules (no shadow), computed under --values cpu.
import torch
x = torch.arange(70000, device="cuda", dtype=torch.float32) / 70000
bufs = []
t = 0
while x[t * 7000] < 0.55:
    bufs.append(torch.empty(1 << 18, device="cuda"))
    t += 1
print("steps", t)
