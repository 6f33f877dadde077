# PyTorch's inference fast paths under memsim record --fake on the H200
# (tests/recorder_fastpath.sh).  CASE: mha_w (nn.MultiheadAttention, eval,
# need_weights: _native_multi_head_attention's own path), mha_kpm (the
# same with a key padding mask, no weights), tenc (nn.TransformerEncoder,
# 2 layers, a left-aligned key padding mask: the nested tensor from the
# mask, memory-efficient attention over lengths), tenc_f16 (the same in
# fp16 under inference_mode: flash attention over lengths).
import sys
import torch
import torch.nn as nn

case = sys.argv[1]
dev = "cuda"
B, T, E, H = 2, 8, 32, 4
torch.manual_seed(0)


def mask(lengths):
    n = torch.tensor(lengths)
    return (torch.arange(T)[None, :] >= n[:, None]).to(dev)


if case.startswith("mha"):
    m = nn.MultiheadAttention(E, H, batch_first=True).to(dev).eval()
    x = torch.randn(B, T, E, device=dev)
    kpm = mask([5, 8]) if case == "mha_kpm" else None
    with torch.no_grad():
        out, w = m(x, x, x, key_padding_mask=kpm,
                   need_weights=case == "mha_w")
else:
    dt = torch.float16 if case == "tenc_f16" else torch.float32
    layer = nn.TransformerEncoderLayer(E, H, 64, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2).to(dev, dt).eval()
    x = torch.randn(B, T, E, device=dev, dtype=dt)
    kpm = mask([5, 7])
    with (torch.inference_mode() if dt == torch.float16 else
          torch.no_grad()):
        y = enc(x, src_key_padding_mask=kpm)
