"""Device probes for memsim record's kernel rules (traces/memsim_record/kernels.py):
per-call allocator trace windows of cuDNN convolutions and SDPA backward.
  python3 kernel_probe.py conv|gconv|sdpa OUT.json [SECONDS]
gconv: grouped convolutions, not depthwise (ResNeXt's and RegNet's 3x3,
Swin-MLP's grouped 1-d pointwise as its height-1 view), cudnn.benchmark
off: each call's plan alone."""
import json, random, sys, time
import torch
import probewin
from probewin import start
import torch.nn.functional as F

what, out = sys.argv[1], sys.argv[2]
budget = float(sys.argv[3]) if len(sys.argv) > 3 else 90.0
dev = "cuda"
t0 = time.time()


def window():
    return probewin.window(4)


def ph(tag):
    return {"tag": tag, "allocs": window()}


res = []
random.seed(11)
if what in ("conv", "gconv"):
    dts = ["fp16", "bf16", "fp32"]
    cfgs = []
    # the workloads' own shapes first
    for (n, c, k, h, r, s) in [(64, 3, 64, 128, 3, 1), (64, 64, 64, 128, 3, 1),
                               (64, 64, 128, 64, 3, 1), (64, 128, 128, 64, 3, 1),
                               (64, 128, 256, 32, 3, 1), (64, 256, 256, 32, 3, 1),
                               (32, 3, 768, 224, 16, 16)]:
        cfgs.append((n, c, k, h, r, s, "fp16", 0))
    if what == "gconv":
        # (n, c, k, h, w, r, s, dt, cl, groups); h 1: a 1-d convolution
        cfgs = [(512, 256, 256, 1, 6, 1, 1, "fp32", 0, 16),
                (128, 512, 512, 1, 6, 1, 1, "fp32", 0, 32),
                (648, 256, 256, 1, 6, 1, 1, "fp32", 0, 16),
                (16, 128, 128, 56, 56, 3, 1, "fp32", 0, 32),
                (16, 256, 256, 56, 56, 3, 2, "fp32", 0, 32),
                (16, 512, 512, 28, 28, 3, 1, "fp16", 0, 32),
                (32, 224, 224, 28, 28, 3, 1, "fp32", 0, 14)]
        while len(cfgs) < 500:
            n = random.choice([1, 2, 4, 8, 16, 32, 64, 128, 512])
            g = random.choice([2, 3, 4, 8, 16, 32, 64])
            cg = random.choice([2, 4, 6, 8, 16, 24, 32, 48, 64, 128])
            kg = cg if random.random() < 0.7 else random.choice([2, 4, 8, 16, 32, 64])
            one_d = random.random() < 0.3
            h = 1 if one_d else random.choice([4, 7, 8, 14, 16, 28, 32, 56, 112])
            w = random.choice([4, 6, 8, 16, 32, 64, 128]) if one_d else h
            r = 1 if one_d else random.choice([1, 3, 3, 5])
            s = 1 if one_d else random.choice([1, 1, 2])
            dt = random.choice(dts)
            cl = int(not one_d and random.random() < 0.25)
            if n * g * max(cg, kg) * h * w * 4 > 2 ** 30:
                continue
            cfgs.append((n, g * cg, g * kg, h, w, r, s, dt, cl, g))
    while what == "conv" and len(cfgs) < 600:
        n = random.choice([1, 2, 4, 8, 16, 32, 64])
        c = random.choice([3, 4, 16, 32, 64, 96, 128, 192, 256, 320, 384, 512])
        k = random.choice([4, 16, 32, 64, 128, 192, 256, 384, 512])
        h = random.choice([8, 14, 16, 28, 32, 56, 64, 112, 128, 224, 256])
        r = random.choice([1, 3, 3, 7])
        s = random.choice([1, 1, 2])
        dt = random.choice(dts)
        cl = random.random() < 0.25
        if n * c * h * h * 4 > 2 ** 30 or n * k * h * h * 4 > 2 ** 30:
            continue
        cfgs.append((n, c, k, h, r, s, dt, int(cl)))
    if what == "conv":
        cfgs = [(n, c, k, h, h, r, s, dt, cl, 1)
                for (n, c, k, h, r, s, dt, cl) in cfgs]
    for (n, c, k, h, wd, r, s, dt, cl, grp) in cfgs:
        if time.time() - t0 > budget:
            break
        x = torch.randn(n, c, h, wd, device=dev, requires_grad=True)
        if cl:
            x = x.detach().to(memory_format=torch.channels_last).requires_grad_()
        conv = torch.nn.Conv2d(c, k, r, s, padding=r // 2, bias=False,
                               groups=grp).to(dev)
        ad = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dt)
        try:
            start()
            if ad:
                with torch.autocast("cuda", dtype=ad):
                    y = conv(x)
            else:
                y = conv(x)
            fw = ph("forward")
            g = torch.randn_like(y)
            start()
            y.backward(g)
            bw = ph("backward")
            res.append({"n": n, "c": c, "k": k, "h": h, "r": r, "s": s,
                        "dt": dt, "cl": cl, "out": list(y.shape),
                        **({"w": wd, "g": grp} if what == "gconv" else {}),
                        "out_cl": int(y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()),
                        "fw": fw["allocs"], "bw": bw["allocs"]})
        except Exception as e:
            res.append({"n": n, "c": c, "k": k, "h": h, "r": r, "s": s,
                        "dt": dt, "cl": cl, "g": grp, "error": str(e)[:200]})
        del x, conv
        y = g = None
        torch.cuda.empty_cache()
else:
    from torch.nn.attention import sdpa_kernel, SDPBackend
    cfgs = [(32, 12, 197, 64, "bf16", 0, "cudnn"), (8, 8, 384, 64, "fp32", 0, "eff"),
            (8, 8, 128, 64, "fp32", 1, "eff"), (8, 12, 512, 64, "bf16", 1, "cudnn")]
    while len(cfgs) < 400:
        b = random.choice([1, 2, 4, 8, 16, 32])
        hh = random.choice([1, 4, 8, 12, 16, 32])
        sq = random.choice([64, 128, 197, 256, 384, 512, 1000, 1024, 2048, 4096])
        d = random.choice([32, 64, 80, 128])
        be = random.choice(["cudnn", "eff", "eff", "cudnn", "flash"])
        dt = random.choice(["bf16", "fp16"] if be in ("cudnn", "flash") else ["fp32", "bf16", "fp16"])
        causal = int(random.random() < 0.5)
        if b * hh * sq * d * 4 * 8 > 2 ** 31:
            continue
        cfgs.append((b, hh, sq, d, dt, causal, be))
    for (b, hh, sq, d, dt, causal, be) in cfgs:
        if time.time() - t0 > budget:
            break
        td = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dt]
        bk = {"cudnn": SDPBackend.CUDNN_ATTENTION, "eff": SDPBackend.EFFICIENT_ATTENTION,
              "flash": SDPBackend.FLASH_ATTENTION}[be]
        q, k, v = (torch.randn(b, hh, sq, d, device=dev, dtype=td, requires_grad=True) for _ in range(3))
        try:
            start()
            with sdpa_kernel([bk]):
                y = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            fw = ph("forward")
            g = torch.randn_like(y)
            start()
            y.backward(g)
            bw = ph("backward")
            res.append({"b": b, "h": hh, "s": sq, "d": d, "dt": dt, "causal": causal,
                        "be": be, "fw": fw["allocs"], "bw": bw["allocs"]})
        except Exception as e:
            res.append({"b": b, "h": hh, "s": sq, "d": d, "dt": dt, "causal": causal,
                        "be": be, "error": str(e)[:200]})
        q = k = v = y = g = None
        torch.cuda.empty_cache()
torch.cuda.memory._record_memory_history(enabled=None)
json.dump({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "elapsed": time.time() - t0, "probes": res}, open(out, "w"))
print(what, len(res), "probes", time.time() - t0, "s")
