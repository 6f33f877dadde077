"""Workloads for real vs --fake comparisons: python3 workloads.py NAME [SCALE]

Small models defined here (no downloaded weights); each runs a few steps on
"cuda" as an ordinary user script would.
"""
import math
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

NAME = sys.argv[1]
S = int(sys.argv[2]) if len(sys.argv) > 2 else 1
dev = "cuda"
torch.manual_seed(0)


class Attn(nn.Module):
    def __init__(s, d, h, causal=True, kv=None):
        super().__init__()
        s.h, s.d, s.causal = h, d, causal
        s.q = nn.Linear(d, d, bias=False)
        s.kv = nn.Linear(kv or d, 2 * d, bias=False)
        s.o = nn.Linear(d, d, bias=False)

    def forward(s, x, mem=None):
        b, t, d = x.shape
        m = x if mem is None else mem
        q = s.q(x).view(b, t, s.h, d // s.h).transpose(1, 2)
        k, v = s.kv(m).split(d, 2)
        k = k.view(b, m.shape[1], s.h, d // s.h).transpose(1, 2)
        v = v.view(b, m.shape[1], s.h, d // s.h).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=s.causal and mem is None)
        return s.o(y.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(s, d, h, llama=False, causal=True, cross=False):
        super().__init__()
        s.llama = llama
        s.n1 = nn.RMSNorm(d) if llama else nn.LayerNorm(d)
        s.a = Attn(d, h, causal)
        s.n2 = nn.RMSNorm(d) if llama else nn.LayerNorm(d)
        s.c = Attn(d, h, False) if cross else None
        s.nc = nn.LayerNorm(d) if cross else None
        f = 4 * d
        if llama:
            s.gate = nn.Linear(d, f, bias=False)
            s.up = nn.Linear(d, f, bias=False)
            s.down = nn.Linear(f, d, bias=False)
        else:
            s.fc = nn.Linear(d, f)
            s.proj = nn.Linear(f, d)

    def forward(s, x, mem=None):
        x = x + s.a(s.n1(x))
        if s.c is not None:
            x = x + s.c(s.nc(x), mem)
        y = s.n2(x)
        if s.llama:
            return x + s.down(F.silu(s.gate(y)) * s.up(y))
        return x + s.proj(F.gelu(s.fc(y)))


class LM(nn.Module):
    def __init__(s, v, d, h, L, llama=False):
        super().__init__()
        s.emb = nn.Embedding(v, d)
        s.blocks = nn.ModuleList(Block(d, h, llama) for _ in range(L))
        s.norm = nn.LayerNorm(d)
        s.head = nn.Linear(d, v, bias=False)

    def forward(s, idx):
        x = s.emb(idx)
        for b in s.blocks:
            x = b(x)
        return s.head(s.norm(x))


def train(model, batches, lossf, steps=3, opt=None, dtype=None, accum=1):
    opt = opt or torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(steps):
        for _ in range(accum):
            x, y = batches()
            if dtype is not None:
                with torch.autocast("cuda", dtype=dtype):
                    loss = lossf(model(x), y)
            else:
                loss = lossf(model(x), y)
            (loss / accum).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(NAME, "loss", float(loss.item()))


def lm_loss(logits, y):
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


def tokens(v, b, t):
    return lambda: (torch.randint(0, v, (b, t), device=dev),
                    torch.randint(0, v, (b, t), device=dev))


if NAME == "gptfit":
    # batch = SCALE; a per-process cap from WL_CAP (bytes) on real GPUs
    import os
    if os.environ.get("WL_CAP"):
        cap = int(os.environ["WL_CAP"])
        torch.cuda.set_per_process_memory_fraction(
            cap / torch.cuda.get_device_properties(0).total_memory)
    m = LM(16384, 768, 12, 6).to(dev)
    train(m, tokens(16384, S, 512), lm_loss)
elif NAME == "gpt":
    m = LM(16384, 768, 12, 6).to(dev)
    train(m, tokens(16384, 8 * S, 512), lm_loss)
elif NAME == "gpt_bf16":
    m = LM(16384, 768, 12, 6).to(dev)
    train(m, tokens(16384, 8 * S, 512), lm_loss, dtype=torch.bfloat16)
elif NAME == "llama":
    m = LM(32000, 1024, 16, 4, llama=True).to(dev).to(torch.bfloat16)
    train(m, tokens(32000, 4 * S, 512), lm_loss)
elif NAME == "accum":
    m = LM(16384, 512, 8, 4).to(dev)
    train(m, tokens(16384, 4 * S, 256), lm_loss, accum=4)
elif NAME == "encdec":
    class ED(nn.Module):
        def __init__(s, v=8000, d=512, h=8, L=3):
            super().__init__()
            s.emb = nn.Embedding(v, d)
            s.enc = nn.ModuleList(Block(d, h, causal=False) for _ in range(L))
            s.dec = nn.ModuleList(Block(d, h, cross=True) for _ in range(L))
            s.head = nn.Linear(d, v)

        def forward(s, src_tgt):
            src, tgt = src_tgt
            m = s.emb(src)
            for b in s.enc:
                m = b(m)
            x = s.emb(tgt)
            for b in s.dec:
                x = b(x, m)
            return s.head(x)
    m = ED().to(dev)
    train(m, lambda: ((torch.randint(0, 8000, (8 * S, 384), device=dev),
                       torch.randint(0, 8000, (8 * S, 128), device=dev)),
                      torch.randint(0, 8000, (8 * S, 128), device=dev)), lm_loss)
elif NAME == "vit":
    class ViT(nn.Module):
        def __init__(s, d=768, L=6, p=16):
            super().__init__()
            s.patch = nn.Conv2d(3, d, p, p)
            s.cls = nn.Parameter(torch.zeros(1, 1, d))
            s.pos = nn.Parameter(torch.zeros(1, 197, d))
            s.blocks = nn.ModuleList(Block(d, 12, causal=False) for _ in range(L))
            s.norm = nn.LayerNorm(d)
            s.head = nn.Linear(d, 1000)

        def forward(s, x):
            x = s.patch(x).flatten(2).transpose(1, 2)
            x = torch.cat([s.cls.expand(x.shape[0], -1, -1), x], 1) + s.pos
            for b in s.blocks:
                x = b(x)
            return s.head(s.norm(x[:, 0]))
    m = ViT().to(dev)
    train(m, lambda: (torch.randn(32 * S, 3, 224, 224, device=dev),
                      torch.randint(0, 1000, (32 * S,), device=dev)),
          F.cross_entropy, dtype=torch.bfloat16)
elif NAME == "cnn_scaler":
    def cb(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False),
                             nn.BatchNorm2d(o), nn.ReLU())
    m = nn.Sequential(cb(3, 64), cb(64, 64), nn.MaxPool2d(2), cb(64, 128),
                      cb(128, 128), nn.MaxPool2d(2), cb(128, 256), cb(256, 256),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(256, 100)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(3):
        x = torch.randn(64 * S, 3, 128, 128, device=dev)
        y = torch.randint(0, 100, (64 * S,), device=dev)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(m(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        print(NAME, "loss", loss.item())
elif NAME.startswith("unet"):
    res = int(NAME[4:] or 64)

    class Res(nn.Module):
        def __init__(s, i, o):
            super().__init__()
            s.n1 = nn.GroupNorm(8, i)
            s.c1 = nn.Conv2d(i, o, 3, padding=1)
            s.n2 = nn.GroupNorm(8, o)
            s.c2 = nn.Conv2d(o, o, 3, padding=1)
            s.skip = nn.Conv2d(i, o, 1) if i != o else nn.Identity()

        def forward(s, x):
            h = s.c1(F.silu(s.n1(x)))
            return s.skip(x) + s.c2(F.silu(s.n2(h)))

    class UNet(nn.Module):
        def __init__(s, ch=(64, 128, 256)):
            super().__init__()
            s.inp = nn.Conv2d(4, ch[0], 3, padding=1)
            s.down = nn.ModuleList()
            s.up = nn.ModuleList()
            c = ch[0]
            for o in ch:
                s.down.append(Res(c, o))
                c = o
            s.mid = Res(c, c)
            for o in reversed(ch):
                s.up.append(Res(c + o, o))
                c = o
            s.out = nn.Conv2d(c, 4, 3, padding=1)

        def forward(s, x):
            x = s.inp(x)
            skips = []
            for i, d in enumerate(s.down):
                x = d(x)
                skips.append(x)
                if i < len(s.down) - 1:
                    x = F.avg_pool2d(x, 2)
            x = s.mid(x)
            for i, u in enumerate(s.up):
                sk = skips.pop()
                if x.shape[-1] != sk.shape[-1]:
                    x = F.interpolate(x, scale_factor=2, mode="nearest")
                x = u(torch.cat([x, sk], 1))
            return s.out(x)
    m = UNet().to(dev)
    train(m, lambda: (torch.randn(8 * S, 4, res, res, device=dev),
                      torch.randn(8 * S, 4, res, res, device=dev)),
          F.mse_loss, dtype=torch.bfloat16)
elif NAME == "moe":
    class MoE(nn.Module):
        def __init__(s, d=512, E=8, k=2):
            super().__init__()
            s.E, s.k = E, k
            s.router = nn.Linear(d, E, bias=False)
            s.w1 = nn.ModuleList(nn.Linear(d, 4 * d) for _ in range(E))
            s.w2 = nn.ModuleList(nn.Linear(4 * d, d) for _ in range(E))

        def forward(s, x):
            b, t, d = x.shape
            x = x.reshape(-1, d)
            p = F.softmax(s.router(x), -1)
            w, idx = p.topk(s.k, -1)
            out = torch.zeros_like(x)
            for e in range(s.E):
                tok, slot = torch.where(idx == e)
                h = s.w2[e](F.gelu(s.w1[e](x[tok])))
                out.index_add_(0, tok, h * w[tok, slot, None])
            return out.view(b, t, d)

    class Net(nn.Module):
        def __init__(s, v=8000, d=512):
            super().__init__()
            s.emb = nn.Embedding(v, d)
            s.layers = nn.ModuleList(MoE(d) for _ in range(2))
            s.head = nn.Linear(d, v)

        def forward(s, idx):
            x = s.emb(idx)
            for l in s.layers:
                x = x + l(x)
            return s.head(x)
    m = Net().to(dev)
    train(m, tokens(8000, 8 * S, 256), lm_loss)
elif NAME == "ckpt_seq":
    from torch.utils.checkpoint import checkpoint_sequential
    m = nn.Sequential(*[nn.Sequential(nn.Linear(2048, 2048), nn.GELU())
                        for _ in range(32)]).to(dev)
    opt = torch.optim.Adam(m.parameters())
    for _ in range(3):
        x = torch.randn(256 * S, 2048, device=dev, requires_grad=True)
        y = checkpoint_sequential(m, 6, x, use_reentrant=False)
        y.pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
elif NAME == "int8_infer":
    class QLinear(nn.Module):
        def __init__(s, lin):
            super().__init__()
            w = lin.weight.data
            scale = w.abs().amax(1, keepdim=True) / 127
            s.register_buffer("w", (w / scale).round().to(torch.int8))
            s.register_buffer("scale", scale.to(torch.bfloat16))

        def forward(s, x):
            return F.linear(x, s.w.to(x.dtype) * s.scale)
    m = LM(32000, 1024, 16, 6, llama=True)
    for b in m.blocks:
        for n in ("gate", "up", "down"):
            setattr(b, n, QLinear(getattr(b, n)))
    m = m.to(torch.bfloat16).to(dev).eval()
    with torch.no_grad():
        for _ in range(3):
            logits = m(torch.randint(0, 32000, (8 * S, 512), device=dev))
            print(NAME, logits.float().mean().item())
elif NAME == "kvgen":
    d, h, L, v = 1024, 16, 6, 32000
    m = LM(v, d, h, L).to(dev).to(torch.bfloat16).eval()
    B, P, N = 8 * S, 256, 64
    with torch.no_grad():
        idx = torch.randint(0, v, (B, P), device=dev)
        cache = [(torch.empty(B, h, P + N, d // h, device=dev, dtype=torch.bfloat16),
                  torch.empty(B, h, P + N, d // h, device=dev, dtype=torch.bfloat16))
                 for _ in range(L)]

        def step(x, pos):
            t = x.shape[1]
            x = m.emb(x)
            for i, b in enumerate(m.blocks):
                y = b.n1(x)
                q = b.a.q(y).view(B, t, h, d // h).transpose(1, 2)
                k, vv = b.a.kv(y).split(d, 2)
                cache[i][0][:, :, pos:pos + t] = k.view(B, t, h, d // h).transpose(1, 2)
                cache[i][1][:, :, pos:pos + t] = vv.view(B, t, h, d // h).transpose(1, 2)
                K = cache[i][0][:, :, :pos + t]
                V = cache[i][1][:, :, :pos + t]
                a = F.scaled_dot_product_attention(q, K, V, is_causal=(t > 1))
                x = x + b.a.o(a.transpose(1, 2).reshape(B, t, d))
                x = x + b.proj(F.gelu(b.fc(b.n2(x))))
            return m.head(m.norm(x[:, -1:]))
        logits = step(idx, 0)
        out = [logits.argmax(-1)]
        for n in range(N - 1):
            logits = step(out[-1], P + n)
            out.append(logits.argmax(-1))
        print(NAME, torch.cat(out, 1).shape)
elif NAME == "fsdp":
    import os
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    dist.init_process_group("nccl")
    r = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(r)
    m = FSDP(LM(16384, 1024, 16, 6).to(dev))
    train(m, tokens(16384, 4 * S, 512), lm_loss)
    if r == 0:
        print("fsdp peak", torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved())
    dist.destroy_process_group()
elif NAME == "exit3":
    torch.zeros(4, device=dev)
    sys.exit(3)
elif NAME == "nogpu":
    print(torch.zeros(4).sum())
else:
    sys.exit("workloads.py: unknown workload " + NAME)
