"""A second set of workloads of kinds memsim's recorder had not been tried
on: recurrent nets (cuDNN RNN), a torchvision ViT with fused AdamW and bf16
autocast, a UNet with ConvTranspose2d and GroupNorm, a 3-D convolution
video net, nn.TransformerEncoder with a key padding mask (training, then
the nested-tensor fast path in eval), non-reentrant checkpointing around a
custom autograd.Function with fp16 causal attention and gradient
accumulation, an EmbeddingBag recommender, and a DistilBERT classifier
with Adam (foreach).  Models from constructors and configs, random
weights, nothing downloaded.  python3 arch_models.py NAME"""
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

name = sys.argv[1]
dev = "cuda"
torch.manual_seed(0)


def train(m, opt, batches, loss_fn, dtype=None, scaler=None):
    for x, y in batches:
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = loss_fn(m(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)


class RNNLM(nn.Module):
    def __init__(self, cell, vocab, d, hidden, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = cell(d, hidden, layers, batch_first=True, dropout=0.1)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h)


def lm_loss(logits, y):
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


class UNet(nn.Module):
    def __init__(self, c=32, levels=3):
        super().__init__()
        self.inc = nn.Conv2d(3, c, 3, padding=1)
        self.down, self.up, self.dec = nn.ModuleList(), nn.ModuleList(), \
            nn.ModuleList()
        ch = c
        for _ in range(levels):
            self.down.append(nn.Sequential(
                nn.Conv2d(ch, ch * 2, 3, stride=2, padding=1),
                nn.GroupNorm(8, ch * 2), nn.SiLU(),
                nn.Conv2d(ch * 2, ch * 2, 3, padding=1),
                nn.GroupNorm(8, ch * 2), nn.SiLU()))
            ch *= 2
        for _ in range(levels):
            self.up.append(nn.ConvTranspose2d(ch, ch // 2, 2, stride=2))
            self.dec.append(nn.Sequential(
                nn.Conv2d(ch, ch // 2, 3, padding=1),
                nn.GroupNorm(8, ch // 2), nn.SiLU()))
            ch //= 2
        self.out = nn.Conv2d(ch, 4, 1)

    def forward(self, x):
        x = self.inc(x)
        skips = []
        for d in self.down:
            skips.append(x)
            x = d(x)
        for u, d in zip(self.up, self.dec):
            x = d(torch.cat([u(x), skips.pop()], 1))
        return self.out(x)


class ScaledGelu(torch.autograd.Function):
    """A hand-written activation: saves its input, recomputes in backward."""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(1.702 * x)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        s = torch.sigmoid(1.702 * x)
        return g * (s + 1.702 * x * s * (1 - s))


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h) \
            .permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(ScaledGelu.apply(self.fc1(self.ln2(x))))


class CkptLM(nn.Module):
    def __init__(self, vocab=8192, d=512, h=8, n=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(n))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint
        x = self.emb(x)
        for blk in self.blocks:
            x = checkpoint(blk, x, use_reentrant=False)
        return self.head(self.ln(x))


class RecSys(nn.Module):
    def __init__(self, tables, dim=64):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(n, dim, mode="sum")
                                  for n in tables)
        self.mlp = nn.Sequential(nn.Linear(dim * len(tables) + 13, 512),
                                 nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, 1))

    def forward(self, inp):
        dense, sparse = inp
        z = [bag(idx, off) for bag, (idx, off) in zip(self.bags, sparse)]
        return self.mlp(torch.cat([dense] + z, 1)).squeeze(1)


if name == "lstm_lm":
    m = RNNLM(nn.LSTM, 10000, 256, 512, 2).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    data = []
    for b, t in [(32, 128), (32, 96), (32, 128)]:
        x = torch.randint(0, 10000, (b, t), device=dev)
        data.append((x, torch.randint(0, 10000, (b, t), device=dev)))
    train(m, opt, data, lm_loss)
elif name == "gru_amp":
    m = RNNLM(nn.GRU, 6000, 192, 384, 3).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    data = []
    for b, t in [(24, 200), (24, 200)]:
        x = torch.randint(0, 6000, (b, t), device=dev)
        data.append((x, torch.randint(0, 6000, (b, t), device=dev)))
    train(m, opt, data, lm_loss, dtype=torch.float16,
          scaler=torch.amp.GradScaler())
    m.eval()
    with torch.no_grad():
        m(torch.randint(0, 6000, (8, 300), device=dev))
elif name == "tv_vit_fused":
    import torchvision
    m = torchvision.models.vit_b_16(num_classes=100).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    data = [(torch.randn(16, 3, 224, 224, device=dev),
             torch.randint(0, 100, (16,), device=dev)) for _ in range(3)]
    train(m, opt, data, F.cross_entropy, dtype=torch.bfloat16)
elif name == "unet_gn":
    m = UNet().to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    data = [(torch.randn(8, 3, 128, 128, device=dev),
             torch.randn(8, 4, 128, 128, device=dev)) for _ in range(3)]
    train(m, opt, data, F.mse_loss, dtype=torch.float16,
          scaler=torch.amp.GradScaler())
elif name == "tv_video3d":
    import torchvision
    m = torchvision.models.video.r3d_18(num_classes=20).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    data = [(torch.randn(4, 3, 16, 112, 112, device=dev),
             torch.randint(0, 20, (4,), device=dev)) for _ in range(2)]
    train(m, opt, data, F.cross_entropy, dtype=torch.bfloat16)
elif name == "tenc_padmask":
    layer = nn.TransformerEncoderLayer(384, 6, 1536, batch_first=True)
    m = nn.TransformerEncoder(layer, 4, enable_nested_tensor=True).to(dev)
    head = nn.Linear(384, 10).to(dev)
    opt = torch.optim.AdamW(list(m.parameters()) + list(head.parameters()))
    lengths = torch.tensor([200, 150, 90, 200, 30, 120, 180, 64] * 2)
    for _ in range(2):
        x = torch.randn(16, 200, 384, device=dev)
        pad = (torch.arange(200)[None, :] >= lengths[:, None]).to(dev)
        y = torch.randint(0, 10, (16,), device=dev)
        h = m(x, src_key_padding_mask=pad)
        loss = F.cross_entropy(head(h[:, 0]), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    m.eval()
    with torch.inference_mode():
        for _ in range(2):
            x = torch.randn(16, 200, 384, device=dev)
            pad = (torch.arange(200)[None, :] >= lengths[:, None]).to(dev)
            head(m(x, src_key_padding_mask=pad)[:, 0])
elif name == "ckpt_fn_accum":
    m = CkptLM().to(dev).half()
    opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
    for step in range(2):
        for micro in range(3):
            x = torch.randint(0, 8192, (4, 512), device=dev)
            loss = F.cross_entropy(m(x).flatten(0, 1).float(),
                                   x.flatten()) / 3
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
elif name == "recsys_bag":
    tables = [200000, 50000, 100000, 20000, 300000, 5000]
    m = RecSys(tables).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    for step in range(3):
        b = 2048
        dense = torch.randn(b, 13, device=dev)
        sparse = []
        for n in tables:
            idx = torch.randint(0, n, (b * 4,), device=dev)
            off = torch.arange(0, b * 4, 4, device=dev)
            sparse.append((idx, off))
        y = torch.rand(b, device=dev)
        loss = F.binary_cross_entropy_with_logits(m((dense, sparse)), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
elif name == "hf_distilbert_cls":
    from transformers import DistilBertConfig, \
        DistilBertForSequenceClassification
    cfg = DistilBertConfig(vocab_size=15000, dim=512, n_layers=4, n_heads=8,
                           hidden_dim=2048, num_labels=5)
    m = DistilBertForSequenceClassification(cfg).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=2e-5, foreach=True)
    for b, t in [(32, 128), (32, 256), (32, 160)]:
        x = torch.randint(1, 15000, (b, t), device=dev)
        mask = torch.ones(b, t, dtype=torch.long, device=dev)
        mask[: b // 2, t // 2:] = 0
        y = torch.randint(0, 5, (b,), device=dev)
        out = m(input_ids=x, attention_mask=mask, labels=y)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
else:
    raise SystemExit("unknown workload " + name)
torch.cuda.synchronize()
