"""cudnn.benchmark's find, measured (tests/data/record/cudnn_find.tsv): for each convolution, the caching
allocator's events (action, size) of the first call (the find) and of
a second call (the cached plan), forward, backward-data and
backward-weight, each phase alone.  Writes JSON lines to $OUT/find.jsonl.

As run on 2 December 2026 (H200): run() makes grad_output's shape with a
first call of the convolution, so that call, not the recorded one, made
the find of the forward descriptor (of a transposed convolution: the
backward-data one), and cuDNN's BenchmarkCache, per thread, kept the
keys of earlier configurations: those rows show the cached plan and
tests/data/record/cudnn_find.tsv leaves them out (80 finds kept).  Since
5 December the shape comes from meta tensors and each configuration runs
in a thread of its own, so every phase's first call is its find.
FIND_SET=stride2 probes stride-2 layers instead (stride2() says which),
FIND_SET=half half-precision ones (half()), FIND_SET=conv1d 1-d ones
(conv1d()), FIND_LIST the layers it lists (listed()).  FIND_BUDGET
stops after that many seconds."""
import json, os, sys, threading, time
import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", "/tmp")
dev = torch.cuda.is_available() and torch.backends.cudnn.is_available()
if not dev:
    print("no CUDA/cuDNN: dry run on the CPU")
D = "cuda" if dev else "cpu"

def stride2():
    """fp32 NCHW stride-2 layers, one factor at a time: around DCGAN's
    256 -> 512 channels 4x4 at 8x8 (its backward-data's find took 2.7 GB
    in the corpus's real run), and its 3-channel 64x64 one, then the 3x3,
    1x1 and 7x7 stride-2 layers of resnets."""
    L = []
    def add(n, c, k, h, r, p):
        L.append(dict(x=(n, c, h, h), w=(k, c, r, r), s=2, p=p, g=1,
                      tr=False, dt="fp32", cl=False, op=0))
    # the wide layers of GAN discriminators (StarGAN's at batch 8 up to
    # 1024 -> 2048 channels at 2x2), one factor at a time around
    # DCGAN's 256 -> 512 at 8x8
    for n in (64, 8, 16, 32):
        add(n, 256, 512, 8, 4, 1)
    for c in (32, 64, 128, 512):
        add(64, c, 512, 8, 4, 1)
    for k in (64, 128, 256, 1024):
        add(64, 256, k, 8, 4, 1)
    for h in (2, 4, 16):
        add(64, 256, 512, h, 4, 1)
    for c, h in ((64, 32), (128, 16), (256, 8), (512, 4), (1024, 2)):
        add(8, c, 2 * c, h, 4, 1)
    for n in (1, 2, 4, 8, 16, 32, 40, 64, 128):
        add(n, 3, 64, 64, 4, 1)
    for c in (1, 8, 16, 64, 128):
        add(64, c, 64, 64, 4, 1)
    for k in (8, 16, 32, 128, 256):
        add(64, 3, k, 64, 4, 1)
    for h in (8, 16, 32, 48, 96, 128):
        add(64, 3, 64, h, 4, 1)
    for n, c, k, h in ((64, 64, 128, 32), (64, 128, 256, 16), (64, 256, 512, 8),
                       (16, 64, 128, 32), (16, 3, 64, 128)):
        add(n, c, k, h, 4, 1)
    for n, c, k, h in ((16, 3, 64, 64), (64, 3, 64, 64), (16, 64, 64, 96),
                       (16, 64, 128, 56), (64, 64, 64, 32), (4, 64, 64, 96)):
        add(n, c, k, h, 3, 1)
    for n, c, k, h in ((16, 256, 512, 56), (64, 3, 64, 64)):
        add(n, c, k, h, 1, 0)
    for n in (8, 16, 32):
        add(n, 3, 64, 224, 7, 3)
    add(64, 3, 64, 64, 5, 2)
    add(64, 3, 64, 64, 6, 2)
    return L

def half():
    """fp16 NCHW layers (autocast's convolutions), one factor at a time
    around a CIFAR ResNet-18's 3x3 stride-1 layer at batch 128 (64
    channels, 32 x 32), its stride-2 and 1x1 shortcut layers, an
    ImageNet stem; then a few of them in bf16 and channels_last."""
    L = []
    def add(n, c, k, h, r, p, s, dt="fp16", cl=False, g=1):
        L.append(dict(x=(n, c, h, h), w=(k, c // g, r, r), s=s, p=p, g=g,
                      tr=False, dt=dt, cl=cl, op=0))
    for n in (1, 8, 32, 128, 256):
        add(n, 64, 64, 32, 3, 1, 1)
    for c in (3, 16, 128, 256, 512):
        add(128, c, 64, 32, 3, 1, 1)
    for k in (16, 128, 256, 512):
        add(128, 64, k, 32, 3, 1, 1)
    for h in (4, 8, 16, 64):
        add(128, 64, 64, h, 3, 1, 1)
    for n, c, h in ((128, 128, 16), (128, 256, 8), (128, 512, 4)):
        add(n, c, c, h, 3, 1, 1)
    for n, c, h in ((128, 64, 32), (128, 128, 16), (128, 256, 8), (32, 64, 32)):
        add(n, c, 2 * c, h, 3, 1, 2)
        add(n, c, 2 * c, h, 1, 0, 2)
    for n, c, k, h in ((128, 64, 256, 32), (128, 256, 64, 32), (32, 256, 64, 56)):
        add(n, c, k, h, 1, 0, 1)
    for n in (16, 64):
        add(n, 3, 64, 224, 7, 3, 2)
    for dt, cl in (("bf16", False), ("fp16", True)):
        add(128, 64, 64, 32, 3, 1, 1, dt, cl)
        add(128, 64, 128, 32, 3, 1, 2, dt, cl)
        add(128, 64, 256, 32, 1, 0, 1, dt, cl)
    return L

def conv1d():
    """fp32 1-d convolutions (F.conv1d, run by PyTorch as 2-d of height
    1): HiFi-GAN's multi-scale discriminator (batch 16, a segment of
    8192 samples: grouped convolutions of kernel 41, its 1024-channel
    layers at the lengths its three scales give), its generator's
    transposed upsampling layers, then, from a fixed seed, plain layers
    of kernels 1 to 15 at lengths 8 to 8192 (stride 1 "same" mostly) and
    grouped and depthwise ones."""
    import random
    L = []
    def add(n, c, k, l, r, s=1, p=None, g=1, tr=False):
        p = r // 2 if p is None else p
        w = (c, k // g, r) if tr else (k, c // g, r)
        L.append(dict(x=(n, c, l), w=w, s=s, p=p, g=g, tr=tr, dt="fp32",
                      cl=False, op=0))
    add(16, 1, 128, 8192, 15, 1, 7)
    add(16, 128, 128, 8192, 41, 2, 20, 4)
    add(16, 128, 256, 4096, 41, 2, 20, 16)
    add(16, 256, 512, 2048, 41, 4, 20, 16)
    add(16, 512, 1024, 512, 41, 4, 20, 16)
    for l in (128, 65, 33, 17):
        add(16, 1024, 1024, l, 41, 1, 20, 16)
        add(16, 1024, 1024, l, 5, 1, 2)
        add(16, 1024, 1, l, 3, 1, 1)
    for n, l in ((16, 32), (1, 100), (1, 400)):
        add(n, 512, 256, l, 16, 8, 4, tr=True)
        add(n, 256, 128, 8 * l, 16, 8, 4, tr=True)
        add(n, 128, 64, 64 * l, 4, 2, 1, tr=True)
    rnd = random.Random(11)
    while len(L) < 110:
        n = rnd.choice([1, 4, 8, 16, 32])
        c = rnd.choice([1, 3, 16, 64, 128, 256, 512, 1024])
        k = rnd.choice([16, 64, 128, 256, 512, 1024])
        l = rnd.choice([8, 16, 24, 33, 50, 64, 100, 128, 256, 500, 1024,
                        4096, 8192])
        r = rnd.choice([1, 3, 3, 5, 5, 7, 9, 15])
        s = rnd.choice([1, 1, 1, 1, 2])
        p = r // 2 if rnd.random() < 0.8 else 0
        if n * max(c, k) * l * 4 > 2 ** 28:
            continue
        add(n, c, k, l, r, s, p)
    while len(L) < 150:
        n = rnd.choice([1, 4, 16])
        c = rnd.choice([64, 128, 256, 512, 1024])
        g = rnd.choice([2, 4, 16, c])
        k = c if g == c else rnd.choice([c, 2 * c])
        l = rnd.choice([16, 33, 64, 128, 512, 2048])
        r = rnd.choice([3, 5, 15, 41])
        s = rnd.choice([1, 1, 2, 4])
        add(n, c, k, l, r, s, r // 2, g)
    return L

def listed(spec):
    """FIND_LIST's layers, "N,C,K,H,R,P,S[,DT[,G]];...": NCHW, H x H
    images, R x R kernels, padding P, stride S, DT fp32 (default), fp16
    or bf16, G groups (1)."""
    L = []
    for item in filter(None, spec.split(";")):
        f = item.split(",")
        n, c, k, h, r, p, s = (int(v) for v in f[:7])
        dt = f[7] if len(f) > 7 else "fp32"
        g = int(f[8]) if len(f) > 8 else 1
        L.append(dict(x=(n, c, h, h), w=(k, c // g, r, r), s=s, p=p, g=g,
                      tr=False, dt=dt, cl=False, op=0))
    return L

def cfgs():
    if os.environ.get("FIND_SET") == "stride2":
        return stride2()
    if os.environ.get("FIND_SET") == "half":
        return half()
    if os.environ.get("FIND_SET") == "conv1d":
        return conv1d()
    if os.environ.get("FIND_LIST"):
        return listed(os.environ["FIND_LIST"])
    L = []
    def add(x, w, s=1, p=0, g=1, tr=False, dt="fp32", cl=False, op=0):
        L.append(dict(x=x, w=w, s=s, p=p, g=g, tr=tr, dt=dt, cl=cl, op=op))
    r = [((16, 3, 224, 224), (64, 3, 7, 7), 2, 3),
         ((16, 64, 56, 56), (64, 64, 3, 3), 1, 1),
         ((16, 64, 56, 56), (128, 64, 3, 3), 2, 1),
         ((16, 128, 28, 28), (128, 128, 3, 3), 1, 1),
         ((16, 256, 14, 14), (256, 256, 3, 3), 1, 1),
         ((16, 512, 7, 7), (512, 512, 3, 3), 1, 1),
         ((16, 64, 56, 56), (256, 64, 1, 1), 1, 0),
         ((16, 256, 56, 56), (64, 256, 1, 1), 1, 0),
         ((16, 256, 56, 56), (512, 256, 1, 1), 2, 0),
         ((32, 64, 56, 56), (64, 64, 3, 3), 1, 1),
         ((64, 64, 32, 32), (64, 64, 3, 3), 1, 1),
         ((8, 128, 64, 64), (128, 128, 5, 5), 1, 2)]
    for x, w, s, p in r:
        add(x, w, s, p)
    for x, w, s, p in r[:6] + r[7:8]:
        add(x, w, s, p, dt="fp16")
        add(x, w, s, p, dt="bf16", cl=True)
    for x, w, s, p in r[1:3] + r[5:6]:
        add(x, w, s, p, cl=True)
    # dcgan (batch 64, nz 100, ngf = ndf = 64): G's transposed convs, D's
    gt = [((64, 100, 1, 1), (100, 512, 4, 4), 1, 0),
          ((64, 512, 4, 4), (512, 256, 4, 4), 2, 1),
          ((64, 256, 8, 8), (256, 128, 4, 4), 2, 1),
          ((64, 128, 16, 16), (128, 64, 4, 4), 2, 1),
          ((64, 64, 32, 32), (64, 3, 4, 4), 2, 1)]
    for x, w, s, p in gt:
        add(x, w, s, p, tr=True)
    dd = [((64, 3, 64, 64), (64, 3, 4, 4), 2, 1),
          ((64, 64, 32, 32), (128, 64, 4, 4), 2, 1),
          ((64, 128, 16, 16), (256, 128, 4, 4), 2, 1),
          ((64, 256, 8, 8), (512, 256, 4, 4), 2, 1),
          ((64, 512, 4, 4), (1, 512, 4, 4), 1, 0)]
    for x, w, s, p in dd:
        add(x, w, s, p)
    for x, w, s, p in gt[1:4]:
        add((16,) + x[1:], w, s, p, tr=True)
    # mobilenet depthwise (fp16: cuDNN; fp32: the native kernel)
    add((16, 32, 112, 112), (32, 1, 3, 3), 1, 1, g=32, dt="fp16")
    add((16, 96, 112, 112), (96, 1, 3, 3), 2, 1, g=96, dt="fp16")
    add((16, 144, 56, 56), (144, 1, 3, 3), 1, 1, g=144, dt="fp16", cl=True)
    add((16, 32, 112, 112), (32, 1, 3, 3), 1, 1, g=32)
    return L

DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

def trace_len():
    if not dev:
        return 0
    return len(torch.cuda.memory._snapshot()["device_traces"][0])

def events(a, b):
    if not dev:
        return []
    t = torch.cuda.memory._snapshot()["device_traces"][0][a:b]
    return [(e["action"], e["size"]) for e in t]

def run(c, out):
    dt = DT[c["dt"]]
    mf = torch.channels_last if c["cl"] else torch.contiguous_format
    x = torch.randn(c["x"], device=D, dtype=dt).contiguous(memory_format=mf)
    w = torch.randn(c["w"], device=D, dtype=dt).contiguous(memory_format=mf)
    s, p, g, tr = c["s"], c["p"], c["g"], c["tr"]
    d = len(c["x"]) - 2
    fwd = (F.conv_transpose1d if tr else F.conv1d) if d == 1 else \
        (F.conv_transpose2d if tr else F.conv2d)
    conv = (lambda: fwd(x, w, None, s, p, 0, g)) if tr else \
        (lambda: fwd(x, w, None, s, p, 1, g))
    # the output's shape from meta tensors: a first call on the device
    # would make the forward's find before the one recorded
    xm, wm = x.to("meta"), w.to("meta")
    ym = fwd(xm, wm, None, s, p, 0, g) if tr else fwd(xm, wm, None, s, p, 1, g)
    gy = torch.randn(ym.shape, device=D, dtype=dt).contiguous(memory_format=mf)
    def bwd(mask):
        return lambda: torch.ops.aten.convolution_backward(
            gy, x, w, None, [s] * d, [p] * d, [1] * d, tr, [0] * d, g, mask)
    rec = dict(c)
    rec["y"] = list(gy.shape)
    for ph, fn in (("forward", conv), ("data", bwd([True, False, False])),
                   ("weight", bwd([False, True, False]))):
        for k in ("find", "again"):
            if dev:
                torch.cuda.synchronize()
            free = torch.cuda.mem_get_info()[0] if dev else 0
            a = trace_len()
            t0 = time.time()
            r = fn()
            del r
            if dev:
                torch.cuda.synchronize()
            dtm = time.time() - t0
            rec[ph + "_" + k] = events(a, trace_len())
            rec[ph + "_" + k + "_free"] = free
            rec[ph + "_" + k + "_s"] = round(dtm, 4)
    out.write(json.dumps(rec) + "\n")
    out.flush()

def main():
    torch.backends.cudnn.benchmark = True
    info = dict(torch=torch.__version__,
                cudnn=torch.backends.cudnn.version() if dev else None,
                empty_cache=torch._C._cuda_get_conv_benchmark_empty_cache()
                if dev else None,
                tf32=torch.backends.cudnn.allow_tf32,
                limit=torch.backends.cudnn.benchmark_limit)
    if dev:
        info["mem"] = torch.cuda.mem_get_info()
        torch.cuda.memory._record_memory_history(max_entries=2000000,
                                                 stacks="python")
    print(info)
    t0 = time.time()
    with open(os.path.join(OUT, "find.jsonl"), "w") as out:
        out.write(json.dumps(info) + "\n")
        budget = float(os.environ.get("FIND_BUDGET", "1e9"))
        for i, c in enumerate(cfgs()):
            if time.time() - t0 > budget:
                break
            if dev:
                torch.cuda.empty_cache()
            # cuDNN's BenchmarkCache is per thread: each configuration's
            # finds in a thread of its own start with no key found
            err = []
            def one():
                try:
                    run(c, out)
                except Exception as e:
                    err.append(repr(e)[:300])
            t = threading.Thread(target=one)
            t.start()
            t.join()
            if err:
                out.write(json.dumps(dict(c, error=err[0])) + "\n")
            print(i, round(time.time() - t0, 1), flush=True)
            if not dev and i >= 3:
                break

main()
