# torch.jit.trace of a CUDA model, saved, then run (yolov7's detect.py:
# TracedModel writes traced_model.pt).
import os
import torch
import torch.nn as nn
m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 3)).cuda().eval()
x = torch.randn(2, 3, 32, 32, device="cuda")
with torch.no_grad():
    tm = torch.jit.trace(m, x, strict=False)
    tm.save("traced.pt")
    y = tm(x)
print(tuple(y.shape), os.path.exists("traced.pt"))
