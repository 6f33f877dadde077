"""Backward-weight workspace probes for memsim record's split-K rule
(traces/memsim_record/kernels.py), denser than kernel_probe.py: the
allocator trace window of each backward (the input needs no grad unless
asked: cudnn_convolution_backward_weight alone).
  python3 wgrad_probe.py OUT.json SECONDS"""
import json, random, sys, time
import torch
import probewin
from probewin import start

out = sys.argv[1]
budget = float(sys.argv[2])
dev = "cuda"
t0 = time.time()


def window():
    return probewin.window(2)


cfgs = []
# (n, c, k, h, r, s, dtype, bias, data)
# the workloads' convolutions: cnn_scaler (fp16, no bias), unet at 64/128/256 (bf16, bias)
for (n, c, k, h) in [(64, 3, 64, 128), (64, 64, 64, 128), (64, 64, 128, 64), (64, 128, 128, 64),
                     (64, 128, 256, 32), (64, 256, 256, 32)]:
    cfgs.append((n, c, k, h, 3, 1, "fp16", 0, 1))
for res in (64, 128, 256):
    for (c, k, h, r) in [(4, 64, 1, 3), (64, 64, 1, 3), (64, 128, 2, 3), (128, 128, 2, 3),
                         (64, 128, 2, 1), (128, 256, 4, 3), (256, 256, 4, 3), (128, 256, 4, 1),
                         (512, 256, 4, 3), (512, 256, 4, 1), (384, 128, 2, 3), (384, 128, 2, 1),
                         (192, 64, 1, 3), (192, 64, 1, 1), (64, 4, 1, 3)]:
        cfgs.append((8, c, k, res // h, r, 1, "bf16", 1, 1))
# A: C = K, spatial and batch swept (fp16, 3x3)
A = []
for c in (16, 32, 64, 128, 256, 512):
    for h in (8, 16, 32, 64, 128):
        for n in (1, 4, 16, 64):
            A.append((n, c, c, h, 3, 1, "fp16", 0, 0))
# B: C != K at two output sizes
B = []
for c in (32, 64, 128, 256):
    for k in (32, 64, 128, 256, 512):
        if c != k:
            for (n, h) in ((64, 32), (16, 64)):
                B.append((n, c, k, h, 3, 1, "fp16", 0, 0))
# C: dtypes
C = []
for dt in ("bf16", "fp32"):
    for c in (32, 128, 512):
        for h in (16, 64):
            for n in (4, 64):
                C.append((n, c, c, h, 3, 1, dt, 0, 0))
random.seed(12)
random.shuffle(A)
cfgs += A + B + C
R = []
while len(R) < 600:
    n = random.choice([1, 2, 4, 8, 16, 32, 64])
    c = random.choice([8, 16, 32, 48, 64, 96, 128, 192, 256, 320, 384, 512])
    k = random.choice([16, 32, 64, 96, 128, 192, 256, 384, 512])
    h = random.choice([8, 14, 16, 28, 32, 56, 64, 112, 128])
    r = random.choice([3, 3, 3, 5, 7])
    s = random.choice([1, 1, 2])
    dt = random.choice(["fp16", "bf16", "fp32"])
    R.append((n, c, k, h, r, s, dt, 0, 0))
cfgs += R
res = []


def dump():
    json.dump({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
               "elapsed": time.time() - t0, "probes": res}, open(out, "w"))


for (n, c, k, h, r, s, dt, bias, data) in cfgs:
    if time.time() - t0 > budget:
        break
    if n * max(c, k) * h * h * 4 > 2 ** 30:
        continue
    ad = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dt)
    try:
        x = torch.randn(n, c, h, h, device=dev, requires_grad=bool(data))
        conv = torch.nn.Conv2d(c, k, r, s, padding=r // 2, bias=bool(bias)).to(dev)
        if ad:
            with torch.autocast("cuda", dtype=ad):
                y = conv(x)
        else:
            y = conv(x)
        g = torch.randn_like(y)
        start()
        y.backward(g)
        bw = window()
        res.append({"n": n, "c": c, "k": k, "h": h, "r": r, "s": s, "dt": dt,
                    "bias": bias, "data": data, "out": list(y.shape), "bw": bw})
    except Exception as e:
        res.append({"n": n, "c": c, "k": k, "h": h, "r": r, "s": s, "dt": dt,
                    "bias": bias, "data": data, "error": str(e)[:200]})
    x = conv = y = g = None
    torch.cuda.empty_cache()
    if len(res) % 100 == 0:
        dump()
torch.cuda.memory._record_memory_history(enabled=None)
dump()
print(len(res), "probes of", len(cfgs), time.time() - t0, "s")
