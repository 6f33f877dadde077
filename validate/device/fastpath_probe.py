"""Probe of PyTorch's inference fast paths (nn.TransformerEncoder with and
without a key padding mask, nn.MultiheadAttention with and without
weights, fp32 and fp16) and of strided nested tensors:
python3 fastpath_probe.py CASE [SNAP].  With SNAP the real run dumps its
allocator history there; without it, run under memsim record --fake, it
gives the recording to compare (tests/corpus/snapdiff.py SNAP REC.csv;
docs/recording.md, "Inference fast paths").  On the H200, every case in
its own process, 8 at a time: 29 s."""
import random, sys
import torch, torch.nn as nn, torch.nn.functional as F

case = sys.argv[1]
snap = sys.argv[2] if len(sys.argv) > 2 else None
if snap:
    torch.cuda.memory._record_memory_history(max_entries=10**6)
dev = "cuda"
torch.manual_seed(0)


def lengths(b, lo, hi, seed=1):
    g = random.Random(seed)
    return [g.randint(lo, hi) for _ in range(b)]


def padmask(lens, t, on_gpu_rand=False):
    if on_gpu_rand:
        ln = torch.randint(t // 4, t, (len(lens),), device=dev)
        return torch.arange(t, device=dev)[None, :] >= ln[:, None]
    ln = torch.tensor(lens)
    return (torch.arange(t)[None, :] >= ln[:, None]).to(dev)


def encoder(d, h, ffn, n, dtype, norm_first=False, act="relu"):
    layer = nn.TransformerEncoderLayer(d, h, ffn, batch_first=True,
                                       norm_first=norm_first, activation=act)
    return nn.TransformerEncoder(layer, n,
                                 enable_nested_tensor=not norm_first
                                 ).to(dev, dtype).eval()


def run_tenc(d, h, ffn, n, b, t, dtype, mask, ctx, **kw):
    enc = encoder(d, h, ffn, n, dtype, **kw)
    x = torch.randn(b, t, d, device=dev, dtype=dtype)
    m = None
    if mask == "host":
        m = padmask(lengths(b, t // 8, t - 1), t)
    elif mask == "gpu":
        m = padmask([0] * b, t, True)
    with ctx():
        y = enc(x, src_key_padding_mask=m)
    return y


def run_mha(e, h, b, t, dtype, need_weights, kpm=False, cross=False,
            avg=True, s=None):
    mha = nn.MultiheadAttention(e, h, batch_first=True).to(dev, dtype).eval()
    x = torch.randn(b, t, e, device=dev, dtype=dtype)
    kv = torch.randn(b, s or t, e, device=dev, dtype=dtype) if cross else x
    m = padmask(lengths(b, (s or t) // 4, (s or t) - 1), s or t) if kpm \
        else None
    with torch.no_grad():
        out, w = mha(x, kv, kv, key_padding_mask=m, need_weights=need_weights,
                     average_attn_weights=avg)
    return out, w


class CausalSelfAttention(nn.Module):
    # PyTorch's SDPA tutorial's module
    def __init__(self, num_heads, embed_dimension, bias=False,
                 is_causal=False, dropout=0.0):
        super().__init__()
        self.c_attn = nn.Linear(embed_dimension, 3 * embed_dimension,
                                bias=bias)
        self.c_proj = nn.Linear(embed_dimension, embed_dimension, bias=bias)
        self.dropout = dropout
        self.resid_dropout = nn.Dropout(dropout)
        self.num_heads = num_heads
        self.embed_dimension = embed_dimension
        self.is_causal = is_causal

    def forward(self, x):
        qp = self.c_attn(x)
        bsz = qp.size(0)
        ed = qp.size(2)
        hd = ed // (self.num_heads * 3)
        q, k, v = qp.chunk(3, -1)
        q = q.view(bsz, -1, self.num_heads, hd).transpose(1, 2)
        k = k.view(bsz, -1, self.num_heads, hd).transpose(1, 2)
        v = v.view(bsz, -1, self.num_heads, hd).transpose(1, 2)
        if self.training:
            dropout, is_causal = self.dropout, self.is_causal
        else:
            dropout, is_causal = 0.0, False
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                           dropout_p=dropout,
                                           is_causal=is_causal)
        y = y.transpose(1, 2).view(bsz, -1, self.num_heads * hd)
        return self.resid_dropout(self.c_proj(y))


def run_nested_sdpa(dtype):
    model = CausalSelfAttention(8, 512, bias=False, is_causal=True,
                                dropout=0.1).to(dev).to(dtype).eval()
    lens = lengths(32, 200, 511, seed=3) + [512]
    nt = torch.nested.nested_tensor(
        [torch.randn(n, 512, dtype=dtype, device=dev) for n in lens])
    model.requires_grad_(False)
    with torch.no_grad():
        y = model(nt)
    return y


def run_nested_linear(dtype):
    lin = nn.Linear(512, 2048).to(dev, dtype).eval()
    lens = lengths(16, 100, 300, seed=4)
    nt = torch.nested.nested_tensor(
        [torch.randn(n, 512, dtype=dtype, device=dev) for n in lens])
    with torch.no_grad():
        y = F.relu(lin(nt))
        z = y.to_padded_tensor(0.0)
    return z


ng, im = torch.no_grad, torch.inference_mode
f32, f16 = torch.float32, torch.float16
CASES = {
    "tenc_mask_f32": lambda: run_tenc(256, 8, 1024, 4, 32, 128, f32, "host", ng),
    "tenc_mask_f16": lambda: run_tenc(256, 8, 1024, 4, 32, 128, f16, "host", im),
    "tenc_nomask_f32": lambda: run_tenc(256, 8, 1024, 4, 32, 128, f32, None, ng),
    "tenc_nomask_f16": lambda: run_tenc(256, 8, 1024, 4, 32, 128, f16, None, im),
    "tenc_big_f32": lambda: run_tenc(512, 8, 2048, 2, 8, 300, f32, "host", im),
    "tenc_nf_gelu": lambda: run_tenc(512, 8, 2048, 2, 8, 300, f32, "host", ng,
                                     norm_first=True, act="gelu"),
    "tenc_dh12": lambda: run_tenc(96, 8, 384, 2, 16, 100, f32, "host", ng),
    "tenc_gpumask": lambda: run_tenc(256, 8, 1024, 4, 32, 128, f32, "gpu", ng),
    "mha_nw_f32": lambda: run_mha(256, 8, 16, 128, f32, False),
    "mha_w_f32": lambda: run_mha(256, 8, 16, 128, f32, True),
    "mha_w_noavg": lambda: run_mha(256, 8, 16, 128, f32, True, avg=False),
    "mha_kpm_f32": lambda: run_mha(256, 8, 16, 128, f32, False, kpm=True),
    "mha_nw_f16": lambda: run_mha(512, 8, 16, 256, f16, False),
    "mha_w_f16": lambda: run_mha(512, 8, 16, 256, f16, True),
    "mha_cross_f32": lambda: run_mha(256, 8, 8, 100, f32, True, cross=True,
                                     s=77),
    "mha_long_kpm": lambda: run_mha(128, 4, 2, 1500, f32, False, kpm=True),
    "nested_sdpa_f16": lambda: run_nested_sdpa(f16),
    "nested_linear_f16": lambda: run_nested_linear(f16),
}
r = CASES[case]()
del r
torch.cuda.synchronize()
print(case, torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved())
if snap:
    torch.cuda.memory._dump_snapshot(snap)
