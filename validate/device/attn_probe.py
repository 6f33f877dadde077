"""Probe of _scaled_dot_product_efficient_attention_backward's (and flash's)
allocations on the GPU: per case the allocator trace of the backward op
alone, every alloc and free in order (+SIZE / -SIZE), and the backward
kernel's name from the profiler.  python3 attn_probe.py OUT.tsv [SECONDS]
(tests/data/record/sdpa_eff_bwd.tsv; on the H200 in 10 s)"""
import random, sys, time
import torch

out, budget = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 150
t0 = time.time()
dev = "cuda"
DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
aten = torch.ops.aten


def start():
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.memory._record_memory_history(
        enabled="all", context=None, stacks="python", max_entries=100000,
        clear_history=True)


def events():
    torch.cuda.synchronize()
    tr = torch.cuda.memory._snapshot()["device_traces"][0]
    ev, live = [], {}
    for e in tr:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            ev.append("+%d" % e["size"])
        elif e["action"] == "free_requested" and e["addr"] in live:
            ev.append("-%d" % live.pop(e["addr"]))
    torch.cuda.memory._record_memory_history(enabled=None)
    return ",".join(ev)


def kname(fn):
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            r = fn()
            torch.cuda.synchronize()
        del r
        names = [e.name for e in p.events() if "cutlassB" in e.name or
                 "flash" in e.name.lower() and "bwd" in e.name.lower()]
        for n in names:
            if "cutlassB" in n:
                return n.split("(")[0].replace("fmha_cutlassB_", "")
        return "flash_bwd" if names else "-"
    except Exception as e:
        return "err:" + str(e)[:40]


def case(be, dt, b, h, m, n, d, dv, drop, causal, bias):
    td = DT[dt]
    # q, k, v as a projection makes them: (B, S, H, D) viewed (B, H, S, D)
    q = torch.randn(b, m, h, d, device=dev, dtype=td).transpose(1, 2)
    k = torch.randn(b, n, h, d, device=dev, dtype=td).transpose(1, 2)
    v = torch.randn(b, n, h, dv, device=dev, dtype=td).transpose(1, 2)
    ab = None
    if bias != "none":
        # as sdpa's preprocessing leaves it: last dim padded to 16, sliced
        pn = (n + 15) // 16 * 16
        ab = torch.randn(b, h, m, pn, device=dev, dtype=td)[..., :n]
    if be == "eff":
        o, lse, seed, off = aten._scaled_dot_product_efficient_attention(
            q, k, v, ab, True, drop, causal)
        g = torch.randn_like(o)
        def bw():
            return aten._scaled_dot_product_efficient_attention_backward(
                g, q, k, v, ab,
                o, lse, seed, off, drop, [True, True, True, bias == "grad"],
                causal)
    else:
        r = aten._scaled_dot_product_flash_attention(q, k, v, drop, causal,
                                                     False)
        o, lse, cq, ck, mq, mk, seed, off = r[:8]
        g = torch.randn_like(o)
        def bw():
            return aten._scaled_dot_product_flash_attention_backward(
                g, q, k, v, o, lse, cq, ck, mq, mk, drop, causal, seed, off)
    bw()  # warm-up (handles, cudaFuncSetAttribute)
    torch.cuda.synchronize()
    start()
    r = bw()
    ev = events()
    del r
    kn = kname(bw)
    return ev, kn


cases = []
random.seed(25)
DS = [32, 40, 64, 80, 96, 100, 112, 128, 160, 192, 256]
for dt in ("fp32", "fp16", "bf16"):
    for d in DS:
        if dt != "fp32" and d % 8:
            continue
        for (m, n) in ((100, 100), (256, 256), (197, 300)):
            cases.append(("eff", dt, 2, 4, m, n, d, d, 0.0, False, "none"))
        cases.append(("eff", dt, 2, 4, 197, 300, d, d, 0.1, False, "none"))
        cases.append(("eff", dt, 3, 5, 130, 1000, d, d, 0.0, True, "none"))
        cases.append(("eff", dt, 8, 40, 200, 128, d, d, 0.0, False, "none"))
        cases.append(("eff", dt, 8, 40, 200, 300, d, d, 0.0, False, "none"))
        cases.append(("eff", dt, 1, 1, 64, 64, d, d, 0.0, False, "mask"))
        cases.append(("eff", dt, 2, 3, 77, 50, d, d, 0.0, False, "grad"))
    for (d, dv) in ((64, 128), (128, 64), (40, 96)):
        cases.append(("eff", dt, 2, 4, 200, 150, d, dv, 0.0, False, "none"))
for dt in ("fp16", "bf16"):
    for d in (40, 64, 96, 128, 160, 192, 256):
        cases.append(("flash", dt, 2, 4, 200, 300, d, d, 0.0, False, "none"))
while len(cases) < 700:
    dt = random.choice(["fp32", "fp16", "bf16"])
    d = random.choice(DS)
    if dt != "fp32" and d % 8:
        continue
    dv = d if random.random() < 0.85 else \
        random.choice([x for x in DS if dt == "fp32" or x % 8 == 0])
    b = random.choice([1, 2, 4, 8, 16])
    h = random.choice([1, 2, 4, 8, 12, 16, 32])
    m = random.choice([1, 17, 64, 100, 128, 197, 256, 500, 512, 1024, 2048])
    n = random.choice([1, 17, 64, 100, 128, 197, 256, 500, 512, 1024, 2048])
    if b * h * max(m, n) * max(d, dv) * 4 > 2 ** 29:
        continue
    drop = random.choice([0.0, 0.0, 0.0, 0.2])
    causal = random.random() < 0.3
    bias = random.choice(["none", "none", "none", "mask", "grad"])
    cases.append(("eff", dt, b, h, m, n, d, dv, drop, causal, bias))

p = torch.cuda.get_device_properties(0)
with open(out, "w") as fp:
    fp.write("# %s torch %s cc %d.%d smem_optin %s\n" % (
        p.name, torch.__version__, p.major, p.minor,
        getattr(p, "shared_memory_per_block_optin", "?")))
    fp.write("backend\tdtype\tb\th\tm\tn\td\tdv\tdropout\tcausal\tbias"
             "\tkernel\tevents\n")
    done = 0
    for c in cases:
        if time.time() - t0 > budget:
            break
        try:
            ev, kn = case(*c)
        except Exception as e:
            ev = "error"
            kn = str(e).replace("\t", " ").replace("\n", " ")[:120]
        fp.write("\t".join(str(x) for x in c[:8]) +
                 "\t%g\t%d\t%s\t%s\t%s\n" % (c[8], c[9], c[10], kn, ev))
        done += 1
        torch.cuda.empty_cache()
print("cases", done, "of", len(cases), "in", round(time.time() - t0, 1), "s")
