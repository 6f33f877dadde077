# tests/recorder_jagged_compile.sh, tests/recorder_jagged_compile_sdpa.sh:
# a jagged nested tensor (layout=torch.jagged) through torch.compile,
# forward and backward, as pytorch/tutorials' transformer_building_blocks.py
# compiles its MultiHeadAttention (kit r40d).  MODE "mlp": Linear, GELU,
# Linear; MODE "attention": a packed projection, scaled_dot_product_attention
# over the ragged sequences, the out-projection.
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

mode = sys.argv[1]
torch.manual_seed(0)
lens = [37, 120, 64, 9, 200, 77]
x = torch.nested.nested_tensor(
    [torch.randn(n, 256, device="cuda") for n in lens],
    layout=torch.jagged)


class Attention(nn.Module):
    def __init__(self, e, h):
        super().__init__()
        self.h = h
        self.packed_proj = nn.Linear(e, 3 * e)
        self.out_proj = nn.Linear(e, e)

    def forward(self, x):
        q, k, v = torch.chunk(self.packed_proj(x), 3, dim=-1)
        q, k, v = (t.unflatten(-1, [self.h, -1]).transpose(1, 2)
                   for t in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(o.transpose(1, 2).flatten(-2))


if mode == "mlp":
    m = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
else:
    m = Attention(256, 8)
m = torch.compile(m.cuda())
for _ in range(2):
    y = m(x)
    print("ragged size kept:", y.shape[1] == x.shape[1], tuple(y.values().shape))
    y.to_padded_tensor(0.0).pow(2).mean().backward()
print("done")
