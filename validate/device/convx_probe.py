"""Device probe for the convolutions memsim record's cuDNN rule
(traces/memsim_record/kernels.py) leaves out: transposed 2-D and 3-D
convolutions, per-call allocator trace windows of forward and backward.
  python3 convx_probe.py OUT.json [SECONDS]
CONVX_SET=monai: fp32 3-d convolutions and transposed ones in the shapes
of MONAI's 3-d UNet instead."""
import json, os, random, sys, time
import torch
from probewin import start, window

out = sys.argv[1]
budget = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
dev = "cuda"
t0 = time.time()


random.seed(7)
# kind, n, c, k, spatial (h or (t, h)), kernel, stride, pad, dtype
cfgs = [("t2", 8, 256, 128, 16, 2, 2, 0, "fp16"),
        ("t2", 8, 128, 64, 32, 2, 2, 0, "fp16"),
        ("t2", 8, 64, 32, 64, 2, 2, 0, "fp16"),
        ("c3", 4, 3, 64, (16, 112), (3, 7, 7), (1, 2, 2), (1, 3, 3), "bf16"),
        ("c3", 4, 64, 64, (16, 56), 3, 1, 1, "bf16"),
        ("c3", 4, 64, 128, (16, 56), 3, 2, 1, "bf16"),
        ("c3", 4, 64, 128, (16, 56), 1, 2, 0, "bf16")]
while len(cfgs) < 300:
    kind = random.choice(["t2", "c3"])
    dt = random.choice(["fp16", "bf16", "fp32"])
    n = random.choice([1, 2, 4, 8, 16])
    c = random.choice([3, 16, 32, 64, 128, 256])
    k = random.choice([16, 32, 64, 128, 256])
    if kind == "t2":
        h = random.choice([8, 16, 32, 64, 128])
        r, s, p = random.choice([(2, 2, 0), (4, 2, 1), (3, 1, 1), (3, 2, 1)])
        if n * max(c, k) * (h * s) ** 2 * 4 > 2 ** 30:
            continue
    else:
        h = (random.choice([4, 8, 16]), random.choice([14, 28, 56, 112]))
        r, s, p = random.choice([(3, 1, 1), (3, 2, 1), (1, 1, 0), (1, 2, 0)])
        if n * max(c, k) * h[0] * h[1] ** 2 * 4 > 2 ** 30:
            continue
    cfgs.append((kind, n, c, k, h, r, s, p, dt))
if os.environ.get("CONVX_SET") == "monai":
    # fp32 3-d convolutions as MONAI's UNet runs them (channels 16 to
    # 256, strides 2, 96^3 patches of 4; kernel 3, padding 1), one factor
    # at a time; t3: its up path's transposed convolutions (output
    # padding 1), into 1 to 8 channels at the top
    cfgs = []
    for n, c, k, h in ((4, 1, 16, 96), (4, 16, 32, 48), (4, 32, 64, 24),
                       (4, 64, 128, 12), (4, 128, 256, 6), (1, 32, 64, 24),
                       (2, 64, 128, 12), (1, 16, 32, 48)):
        cfgs.append(("c3", n, c, k, (h, h), 3, 2, 1, "fp32"))
    for n, c, h in ((4, 16, 48), (4, 32, 24), (4, 64, 12), (4, 128, 6),
                    (4, 256, 3), (4, 256, 6), (1, 64, 12), (4, 1, 96)):
        cfgs.append(("c3", n, c, c, (h, h), 3, 1, 1, "fp32"))
    for n, c, k, h in ((4, 384, 64, 6), (4, 128, 32, 12), (4, 64, 16, 24),
                       (4, 32, 1, 48), (4, 32, 2, 48), (4, 32, 3, 48),
                       (4, 32, 8, 48), (1, 32, 1, 48), (2, 32, 1, 48),
                       (4, 16, 1, 48), (4, 64, 1, 24), (4, 32, 16, 48)):
        cfgs.append(("t3", n, c, k, (h, h), 3, 2, 1, "fp32"))
res = []
for cfg in cfgs:
    if time.time() - t0 > budget:
        break
    kind, n, c, k, h, r, s, p, dt = cfg
    ad = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dt)
    try:
        if kind == "t2":
            conv = torch.nn.ConvTranspose2d(c, k, r, s, p).to(dev)
            x = torch.randn(n, c, h, h, device=dev, requires_grad=True)
        elif kind == "t3":
            conv = torch.nn.ConvTranspose3d(c, k, r, s, p,
                                            output_padding=s - 1).to(dev)
            x = torch.randn(n, c, h[0], h[1], h[1], device=dev,
                            requires_grad=True)
        else:
            conv = torch.nn.Conv3d(c, k, r, s, p, bias=False).to(dev)
            x = torch.randn(n, c, h[0], h[1], h[1], device=dev,
                            requires_grad=True)
        start()
        with torch.autocast("cuda", dtype=ad or torch.float16,
                            enabled=ad is not None):
            y = conv(x)
        fw = window()
        g = torch.randn_like(y)
        start()
        y.backward(g)
        bw = window()
        res.append({"cfg": cfg, "out": list(y.shape), "fw": fw, "bw": bw})
    except Exception as e:
        res.append({"cfg": cfg, "error": str(e)[:200]})
    x = conv = y = g = None
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.empty_cache()
json.dump({"torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "probes": res},
          open(out, "w"))
print("convx probe: %d calls in %.0f s" % (len(res), time.time() - t0))
