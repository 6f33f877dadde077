# Ops the architectures set of workloads (arch_models.py) showed the recorder missing
# (tests/recorder_ops.sh), under memsim record --fake on the H200.
# CASE: groupnorm (GroupNorm forward and backward, fp32), convt (a
# ConvTranspose2d under fp16 autocast, forward and backward), gemm (the
# first Linear: its output, then the cuBLAS and cuBLASLt workspaces),
# nested (nn.TransformerEncoder in eval with a key padding mask), mse
# (F.mse_loss of 8 x 4 x 128 x 128 floats), catconv (a convolution whose
# output is concatenated: its gradient arrives as a channel slice),
# mathmask (scaled_dot_product_attention with a mask that requires grad:
# the math path), accum (an input used by two Linear layers: its two
# gradients accumulate), linear3d (a Linear with a bias on a transposed
# 3-D input), lncopy (LayerNorm on a transposed input, forward and
# backward), embed (nn.Embedding's backward on 4096 indices), embedsmall
# (on 256 indices, a column sliced from 256 x 8), softmax
# (F.softmax over the last dimension of 2 x 4 x 64 x 96 floats, then
# dropout, forward and backward: the gat program's attention), cumsum (of
# a bool mask and of int64), h2dconv (host float64 to the GPU as float32,
# non-blocking, blocking, and non-blocking without a conversion), effbwd
# (scaled_dot_product_attention with a bool mask, forward and backward),
# boolmask (a key padding mask expanded over heads and queries, 20 and 24
# keys, memory-efficient attention), flashpad (causal SDPA of bf16 with a
# head dimension of 60, forward and backward: flash attention).
import sys
import torch

case = sys.argv[1]
dev = "cuda"
if case == "groupnorm":
    gn = torch.nn.GroupNorm(4, 16).to(dev)
    x = torch.randn(2, 16, 8, 8, device=dev, requires_grad=True)
    gn(x).sum().backward()
elif case == "convt":
    ct = torch.nn.ConvTranspose2d(64, 32, 2, stride=2).to(dev)
    x = torch.randn(2, 64, 16, 16, device=dev, requires_grad=True)
    with torch.autocast("cuda", dtype=torch.float16):
        y = ct(x)
    y.float().sum().backward()
elif case == "gemm":
    lin = torch.nn.Linear(64, 128).to(dev)
    lin(torch.randn(32, 64, device=dev))
elif case == "mse":
    x = torch.randn(8, 4, 128, 128, device=dev, requires_grad=True)
    torch.nn.functional.mse_loss(x, torch.randn(8, 4, 128, 128, device=dev))
elif case == "catconv":
    conv = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False).to(dev)
    x = torch.randn(2, 16, 32, 32, device=dev, requires_grad=True)
    torch.cat([conv(x), x], 1).sum().backward()
elif case == "mathmask":
    q, k, v = (torch.randn(2, 4, 128, 32, device=dev, requires_grad=True)
               for _ in range(3))
    mask = torch.zeros(1, 4, 128, 128, device=dev, requires_grad=True)
    torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
elif case == "accum":
    l1 = torch.nn.Linear(128, 128, bias=False).to(dev)
    l2 = torch.nn.Linear(128, 128, bias=False).to(dev)
    x = torch.randn(64, 128, device=dev, requires_grad=True)
    (l1(x) * l2(x)).sum().backward()
elif case == "linear3d":
    lin = torch.nn.Linear(64, 96).to(dev)
    with torch.no_grad():
        lin(torch.randn(16, 8, 64, device=dev).transpose(0, 1))
elif case == "lncopy":
    ln = torch.nn.LayerNorm(64).to(dev)
    x = torch.randn(16, 8, 64, device=dev, requires_grad=True)
    ln(x.transpose(0, 1)).transpose(0, 1).sum().backward()
elif case == "softmax":
    x = torch.randn(2, 4, 64, 96, device=dev, requires_grad=True)
    a = torch.nn.functional.softmax(x, dim=-1)
    torch.nn.functional.dropout(a, 0.5).sum().backward()
elif case == "embed":
    emb = torch.nn.Embedding(10000, 32).to(dev)
    idx = torch.randint(0, 10000, (64, 64), device=dev)
    emb(idx).sum().backward()
elif case == "embedsmall":
    emb = torch.nn.Embedding(2, 16).to(dev)
    idx = torch.randint(0, 2, (256, 8), device=dev)[:, :1]
    emb(idx).sum().backward()
elif case == "cumsum":
    m = torch.ones(4, 100, dtype=torch.bool, device=dev)
    c = m.cumsum(1)
    d = c.cumsum(1)
elif case == "h2dconv":
    h = torch.zeros(1000, dtype=torch.float64)
    a = h.to(dev, torch.float32, non_blocking=True)
    b = h.to(dev, torch.float32)
    c = h.to(dev, non_blocking=True)
elif case == "effbwd":
    q, k, v = (torch.randn(2, 4, 64, 32, device=dev, requires_grad=True)
               for _ in range(3))
    mask = torch.ones(64, 64, dtype=torch.bool, device=dev).tril()
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, mask)
    out.permute(2, 0, 1, 3).contiguous().sum().backward()
elif case == "boolmask":
    with torch.no_grad():
        for n in (20, 24):
            q = torch.randn(2, 4, n, 32, device=dev)
            mask = torch.ones(2, n, dtype=torch.bool, device=dev)
            mask = mask[:, None, None, :].expand(-1, 4, n, -1)
            torch.nn.functional.scaled_dot_product_attention(q, q, q, mask)
elif case == "flashpad":
    q, k, v = (torch.randn(2, 4, 64, 60, device=dev, dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                           is_causal=True)
    out.sum().backward()
elif case == "nested":
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, 2).to(dev).eval()
    pad = torch.zeros(2, 10, dtype=torch.bool, device=dev)
    with torch.inference_mode():
        enc(torch.randn(2, 10, 32, device=dev), src_key_padding_mask=pad)
