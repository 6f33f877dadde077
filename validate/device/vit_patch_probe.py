"""Device probe for vision-language models' patch embeddings and
masked_scatter, after the H100 snapshots of Qwen2-VL, SigLIP and CLIP
(docs/corpus.md, thirty-sixth round) showed workspaces memsim record's
cuDNN rule does not give:
- Qwen2-VL's Conv3d patch embedding: P patches of (3, T, R, R) under a
  kernel of the same size (the output is P x K x 1 x 1 x 1), forward and
  weight gradient (the input does not require grad);
- 2-d patch embeddings over 3 channels (kernel = stride = 14 or 16) in
  half precision, N*P*Q swept, forward and weight gradient;
- masked_scatter of a (B, L, 1)-expanded mask into (B, L, D) as
  Qwen2-VL's get_placeholder_mask builds it (maskPrefixSum, the mask's
  contiguous copy and cub's scan storage).
Per-call allocator trace windows (probewin.py).
  python3 vit_patch_probe.py OUT.json [SECONDS]"""
import random
import time
import torch
from probewin import begin, measure, save, start, window

out, budget, t0 = begin(150.0)
dev = "cuda"
random.seed(48)
res = []
# masked_scatter first (cheap): numel from 1e3 to 1e8
for i in range(60):
    b = random.choice([1, 2, 3, 4, 6, 8, 16])
    L = random.randint(8, 4096)
    d = random.choice([64, 128, 256, 512, 1024, 2048, 4096])
    if b * L * d > 2 ** 27:
        continue
    dt = random.choice([torch.bfloat16, torch.float16, torch.float32])
    emb = torch.randn(b, L, d, device=dev, dtype=dt)
    m = torch.rand(b, L, device=dev) < 0.5
    src = torch.randn(int(m.sum()), d, device=dev, dtype=dt)
    mask = m.unsqueeze(-1).expand_as(emb)
    start()
    y = emb.masked_scatter(mask, src)
    res.append({"op": "masked_scatter", "b": b, "L": L, "d": d,
                "dt": str(dt), "win": window(4)})
    del emb, m, src, mask, y
cfgs = []
while len(cfgs) < 160:
    t = random.choice([2, 2, 1])
    r = random.choice([14, 14, 16])
    p = random.choice([64, 256, 512, 1024, 1536, 2048, 2432, 3072, 4096,
                       6144, 8192, 12288, 16384])
    k = random.choice([64, 128, 256, 512, 768, 1024, 1280])
    dt = random.choice(["bf16", "bf16", "fp16", "fp32"])
    cfgs.append(("3d", p, 3, t, r, k, dt))
    n = random.choice([1, 2, 4, 8, 16, 32, 48, 64])
    h = random.choice([224, 224, 256, 336, 384, 448])
    k2 = random.choice([128, 192, 256, 384, 512, 768, 1024])
    cfgs.append(("2d", n, 3, h, random.choice([14, 16]), k2,
                 random.choice(["bf16", "fp16"])))
for cfg in cfgs:
    if time.time() - t0 > budget:
        break
    if cfg[0] == "3d":
        _, p, c, t, r, k, dt = cfg
        x = torch.randn(p, c, t, r, r, device=dev)
        conv = torch.nn.Conv3d(c, k, (t, r, r), stride=(t, r, r),
                               bias=False).to(dev)
        row = {"op": "conv3d", "n": p, "c": c, "t": t, "r": r, "k": k,
               "dt": dt}
    else:
        _, n, c, h, r, k, dt = cfg
        x = torch.randn(n, c, h, h, device=dev)
        conv = torch.nn.Conv2d(c, k, r, stride=r, bias=False).to(dev)
        row = {"op": "conv2d", "n": n, "c": c, "h": h, "r": r, "k": k,
               "dt": dt}
    res.append(measure(conv, x, dt, row))
    del x, conv
    torch.cuda.empty_cache()
save(out, res, t0)
