"""Device probe for memsim record's 1-D convolution rule (kernels.conv on
the height-1 view, Dispatch._ev_conv): per-call allocator trace windows
of Conv1d forward and backward on CUDA, the shapes time-series models
use (Time-Series-Library's token embeddings, kernel 3 with circular
padding, and its feed-forward layers, kernel 1 from d_model to d_ff).
  python3 conv1d_probe.py OUT.json [SECONDS]"""
import random
import time
import torch
from probewin import begin, measure, save

out, budget, t0 = begin(90.0)
dev = "cuda"
random.seed(7)
cfgs = []
# Time-Series-Library's own layers first: (N, C, K, L, kernel, dtype)
for L in (96, 144, 192):
    cfgs += [(32, 512, 2048, L, 1, "fp32", 1), (32, 2048, 512, L, 1, "fp32", 1),
             (32, 7, 512, L, 3, "fp32", 1), (32, 512, 512, L, 3, "fp32", 1),
             (32, 512, 2048, L, 1, "fp32", 0), (32, 512, 512, L, 3, "fp32", 0)]
while len(cfgs) < 400:
    n = random.choice([1, 4, 8, 16, 32, 64, 128])
    c = random.choice([1, 3, 7, 16, 21, 32, 64, 128, 256, 512, 1024, 2048])
    k = random.choice([16, 32, 64, 128, 256, 512, 1024, 2048])
    L = random.choice([24, 48, 96, 128, 144, 192, 336, 512, 720, 1024])
    r = random.choice([1, 1, 3, 3, 5, 25])
    dt = random.choice(["fp32", "fp32", "fp16", "bf16"])
    if n * max(c, k) * L * 4 > 2 ** 29:
        continue
    cfgs.append((n, c, k, L, r, dt, int(random.random() < 0.4)))
res = []
# t: the input a transpose of (N, L, C), as a time-series model's
# embedding feeds it (x.permute(0, 2, 1))
for (n, c, k, L, r, dt, t) in cfgs:
    if time.time() - t0 > budget:
        break
    x = torch.randn(n, L, c, device=dev).transpose(1, 2) if t else \
        torch.randn(n, c, L, device=dev)
    x.requires_grad_()
    conv = torch.nn.Conv1d(c, k, r, padding=r // 2, bias=False).to(dev)
    res.append(measure(conv, x, dt, {"n": n, "c": c, "k": k, "l": L, "r": r,
                                     "dt": dt, "t": t}))
    del x, conv
    torch.cuda.empty_cache()
save(out, res, t0)
