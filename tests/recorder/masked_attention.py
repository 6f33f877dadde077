# Attention with a mask under memsim record --fake on the H200
# (tests/recorder_mask.sh): which kernel scaled_dot_product_attention runs
# decides what it allocates.  CASE: bool (a boolean mask, no grad), bias
# (an additive fp32 mask under bf16 autocast), biasgrad (the same mask
# requiring grad, as T5's learned position bias).
import sys
import torch
import torch.nn.functional as F

case = sys.argv[1]
dev = "cuda"
b, h, s, d = 2, 4, 64, 64
if case == "bool":
    q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)
               for _ in range(3))
    mask = torch.ones(b, 1, s, s, device=dev, dtype=torch.bool)
    with torch.no_grad():
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
else:
    q, k, v = (torch.randn(b, h, s, d, device=dev, requires_grad=True)
               for _ in range(3))
    mask = torch.zeros(1, h, s, s, device=dev,
                       requires_grad=(case == "biasgrad"))
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    y.float().sum().backward()
