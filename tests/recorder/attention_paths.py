# Attention that PyTorch composes from other ops, under memsim record
# --fake on the H200 (tests/recorder_attention.sh).  CASE: math (the math
# SDPA path, bf16, causal: _safe_softmax), encoder (an
# nn.TransformerEncoderLayer's inference fast path, no mask: its
# attention through SDPA), encmask (the same with a key padding mask and
# no nested tensors: native multi-head attention's own path), enccausal
# (the same with a causal [T, T] float mask instead), enclong (one
# sequence of 1040 with a key padding mask: _masked_softmax's fallback
# for rows longer than 1024), nested (a
# left-aligned padding mask: the nested-tensor path, lengths 16, 24, 24,
# 24), nestedown (the same with d 40 and 2 heads: head dimension 20, not
# a multiple of 8, so native multi-head attention's own path on the
# nested input), padunknown (a padding mask of unknown values: the padded
# path),
# weights (nn.MultiheadAttention's fast path asked for its averaged
# weights), mhabf16 (the same in bf16, no weights asked: cuDNN attention
# on sm90), values (under --values cpu: the fused paths' values against
# the same modules run on the CPU; prints "values ok").
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

case = sys.argv[1]
dev = "cuda"
if case == "math":
    q = torch.randn(2, 4, 256, 64, device=dev, dtype=torch.bfloat16)
    with sdpa_kernel(SDPBackend.MATH), torch.no_grad():
        y = F.scaled_dot_product_attention(q, q, q, is_causal=True)
elif case == "enclong":
    layer = nn.TransformerEncoderLayer(64, 2, 128, batch_first=True)
    enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    enc = enc.to(dev).eval()
    x = torch.randn(1, 1040, 64, device=dev)
    pad = torch.zeros(1, 1040, dtype=torch.bool, device=dev)
    with torch.no_grad():
        y = enc(x, src_key_padding_mask=pad)
elif case in ("encoder", "encmask", "enccausal"):
    layer = nn.TransformerEncoderLayer(64, 2, 128, batch_first=True)
    enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    enc = enc.to(dev).eval()
    x = torch.randn(4, 32, 64, device=dev)
    pad = torch.zeros(4, 32, dtype=torch.bool, device=dev)
    causal = nn.Transformer.generate_square_subsequent_mask(32, device=dev)
    with torch.no_grad():
        y = enc(x, src_key_padding_mask=pad if case == "encmask" else None,
                mask=causal if case == "enccausal" else None)
elif case in ("nested", "nestedown", "padunknown"):
    d = 40 if case == "nestedown" else 64
    layer = nn.TransformerEncoderLayer(d, 2, 128, batch_first=True)
    enc = nn.TransformerEncoder(layer, 1).to(dev).eval()
    x = torch.randn(4, 32, d, device=dev)
    if case != "padunknown":
        pad = torch.zeros(4, 32, dtype=torch.bool, device=dev)
        pad[:, 24:] = True
        pad[0, 16:] = True
    else:
        pad = torch.randn(4, 32, device=dev) > 0
    with torch.no_grad():
        y = enc(x, src_key_padding_mask=pad)
elif case == "mhabf16":
    mha = nn.MultiheadAttention(64, 2, batch_first=True)
    mha = mha.to(dev, torch.bfloat16).eval()
    x = torch.randn(4, 32, 64, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        y, _ = mha(x, x, x, need_weights=False)
elif case == "values":
    import copy
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(64, 2, batch_first=True).to(dev).eval()
    layer = nn.TransformerEncoderLayer(64, 2, 128, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    enc = enc.to(dev).eval()
    x = torch.randn(4, 32, 64).to(dev)
    a = torch.randn(2, 8).to(dev)
    a[1, :] = float("-inf")
    with torch.no_grad():
        z, w = mha(x, x, x)
        y = enc(x)
        s = torch.ops.aten._safe_softmax(a, -1)
        mc, ec = copy.deepcopy(mha).cpu(), copy.deepcopy(enc).cpu()
        zc, wc = mc(x.cpu(), x.cpu(), x.cpu())
        yc = ec(x.cpu())
        sc = torch.ops.aten._safe_softmax(a.cpu(), -1)
    ok = [torch.allclose(u.cpu(), v, atol=1e-5)
          for u, v in ((z, zc), (w, wc), (y, yc), (s, sc))]
    print("values", "ok" if all(ok) else ok)
else:
    mha = nn.MultiheadAttention(64, 2, batch_first=True).to(dev).eval()
    x = torch.randn(4, 32, 64, device=dev)
    with torch.no_grad():
        y, w = mha(x, x, x)
