"""Device probe for the fp32 NCHW convolutions memsim record's cuDNN rule
(traces/memsim_record/kernels.py) leaves out: few channels, square
kernels of 3 to 11 with "same" padding, small images, as
Time-Series-Library's TimesNet runs them (Inception_Block_V1 over a
series folded by its period).  Per-call allocator trace windows of
forward and backward.
  python3 conv2d_kernel_probe.py OUT.json [SECONDS]"""
import random
import time
import torch
from probewin import begin, measure, save

out, budget, t0 = begin(120.0)
dev = "cuda"
random.seed(11)
cfgs = []
# TimesNet's own: a series of length L folded by period p into
# ceil(L / p) x p, d_model -> d_ff and back, kernels 1 to 11
for (n, c, k, L) in ((32, 16, 32, 192), (32, 32, 16, 192),
                     (128, 64, 64, 100), (16, 16, 32, 96)):
    for p in (2, 3, 4, 8, 12, 24, 48, 96):
        for r in (1, 3, 5, 7, 9, 11):
            cfgs.append((n, c, k, -(-L // p), p, r, "fp32"))
while len(cfgs) < 700:
    n = random.choice([1, 4, 16, 32, 64, 128])
    c = random.choice([3, 8, 16, 32, 64, 128, 256])
    k = random.choice([8, 16, 32, 64, 128, 256])
    h = random.choice([1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96])
    w = random.choice([1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96])
    r = random.choice([3, 5, 7, 9, 11])
    dt = random.choice(["fp32", "fp32", "fp32", "bf16"])
    if n * max(c, k) * h * w * 4 > 2 ** 28:
        continue
    cfgs.append((n, c, k, h, w, r, dt))
res = []
for (n, c, k, h, w, r, dt) in cfgs:
    if time.time() - t0 > budget:
        break
    x = torch.randn(n, c, h, w, device=dev, requires_grad=True)
    conv = torch.nn.Conv2d(c, k, r, padding=r // 2, bias=False).to(dev)
    res.append(measure(conv, x, dt, {"n": n, "c": c, "k": k, "h": h, "w": w,
                                     "r": r, "dt": dt}))
    del x, conv
    torch.cuda.empty_cache()
save(out, res, t0)
