# tests/recorder_nested.sh: jagged nested tensors (layout=torch.jagged)
# through a small attention block, forward and backward, fp16 (flash)
# then fp32 (memory-efficient); its H200 run: tests/recorder_nested.sh.
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
lens = [37, 120, 64, 9, 200, 77]
for dt in (torch.float16, torch.float32):
    qkv = nn.Linear(256, 768, device="cuda", dtype=dt)
    out = nn.Linear(256, 256, device="cuda", dtype=dt)
    x = torch.nested.nested_tensor(
        [torch.randn(n, 256, device="cuda", dtype=dt) for n in lens],
        layout=torch.jagged, requires_grad=True)
    q, k, v = qkv(x).chunk(3, dim=-1)
    q, k, v = (t.unflatten(-1, (8, 32)).transpose(1, 2) for t in (q, k, v))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=False)
    y = out(o.transpose(1, 2).flatten(-2))
    y.values().float().pow(2).mean().backward()
    del qkv, out, x, q, k, v, o, y
    print(dt, "done")
