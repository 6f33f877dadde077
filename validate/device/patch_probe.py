"""Device probe for the convolutions over few input channels that
memsim record's cuDNN rule (traces/memsim_record/kernels.py) gives no
workspace: image stems and patch embeddings (ViT, CLIP, DINOv2, ConvNeXt:
kernel = stride), NCHW, 1 to 4 input channels, fp16 and bf16 under
autocast and fp32.  The input does not require grad (the backward window
is the weight gradient's).  Per-call allocator trace windows.
  python3 patch_probe.py OUT.json [SECONDS]"""
import random
import time
import torch
from probewin import begin, measure, save

out, budget, t0 = begin(120.0)
dev = "cuda"
random.seed(29)
# (kernel, stride, padding): patch embeddings, then stems
KINDS = [(16, 16, 0), (14, 14, 0), (32, 32, 0), (8, 8, 0), (4, 4, 0),
         (7, 2, 3), (3, 1, 1), (3, 2, 1)]
# CLIP's ViT-B/32 and a ViT-B/16 patch embedding first
cfgs = [(16, 3, 224, 768, 32, 32, 0, "fp16"),
        (32, 3, 224, 768, 16, 16, 0, "fp16")]
while len(cfgs) < 600:
    r, s, p = random.choice(KINDS)
    n = random.choice([1, 2, 4, 8, 16, 32, 64])
    c = random.choice([3, 3, 3, 1, 4])
    h = random.choice([224, 224, 256, 128, 96, 512])
    k = random.choice([32, 64, 96, 128, 192, 384, 768, 1024])
    dt = random.choice(["fp16", "bf16", "fp32"])
    if n * max(c * h * h, k * (h // s) ** 2) * 4 > 2 ** 30:
        continue
    cfgs.append((n, c, h, k, r, s, p, dt))
res = []
for (n, c, h, k, r, s, p, dt) in cfgs:
    if time.time() - t0 > budget:
        break
    x = torch.randn(n, c, h, h, device=dev)
    conv = torch.nn.Conv2d(c, k, r, stride=s, padding=p, bias=False).to(dev)
    res.append(measure(conv, x, dt, {"n": n, "c": c, "h": h, "k": k, "r": r,
                                     "s": s, "p": p, "dt": dt}))
    del x, conv
    torch.cuda.empty_cache()
save(out, res, t0)
