"""Device probe for the 7x7 stride-2 image stems (torchvision's and
timm's ResNets, DETR's and ACT's backbones) that memsim record's cuDNN
rule (traces/memsim_record/kernels.py) gives no forward workspace below
8 input channels: NCHW, 1 and 3 input channels, square and 4:3 images,
fp32 and fp16 and bf16 under autocast, padding 3, no bias.  The input
does not require grad (the backward window is the weight gradient's).
Per-call allocator trace windows (probewin).  STEM_SEED and STEM_CALLS
(45 and 900 by default) draw another or a larger set of shapes.
  python3 stem_probe.py OUT.json [SECONDS]"""
import os
import random
import time
import torch
from probewin import begin, measure, save

out, budget, t0 = begin(150.0)
dev = "cuda"
random.seed(int(os.environ.get("STEM_SEED", "45")))
ncalls = int(os.environ.get("STEM_CALLS", "900"))
cfgs = []
seen = set()
while len(cfgs) < ncalls:
    n = random.choice([1, 2, 4, 8, 16, 32, 64, 128])
    c = random.choice([3, 3, 3, 1])
    h = random.choice([64, 96, 128, 160, 192, 224, 224, 256, 320, 384, 480, 512])
    w = random.choice([h, h, h * 4 // 3])
    k = random.choice([32, 48, 64, 64, 64, 96, 128, 192, 256, 384, 768])
    dt = random.choice(["fp32", "fp32", "fp16", "bf16"])
    key = (n, c, h, w, k, dt)
    if key in seen or n * max(c * h * w, k * (h // 2) * (w // 2)) * 4 > 2 ** 31:
        continue
    seen.add(key)
    cfgs.append(key)
res = []
for (n, c, h, w, k, dt) in cfgs:
    if time.time() - t0 > budget:
        break
    x = torch.randn(n, c, h, w, device=dev)
    conv = torch.nn.Conv2d(c, k, 7, stride=2, padding=3, bias=False).to(dev)
    res.append(measure(conv, x, dt, {"n": n, "c": c, "h": h, "w": w, "k": k,
                                     "r": 7, "s": 2, "p": 3, "dt": dt}))
    del x, conv
    torch.cuda.empty_cache()
save(out, res, t0)
