"""A compiled model whose checkpointed blocks run attention with dropout
(F.scaled_dot_product_attention(dropout_p=0.1), as transformers' GPT-2
does under gradient_checkpointing_enable()): the attention kernel is a
seeded random op the partitioner recomputes in the backward, so
AOTAutograd's graph-safe RNG functionalization gives the forward and the
backward graphs a generator each, cloned from the CUDA device's default
generator (partitioners.apply_graphsafe_rng_functionalization:
get_default_generator(device).clone_state())."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Attn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, C // self.h).permute(
            2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=0.1 if self.training else 0.0, is_causal=True)
        return x + self.proj(y.transpose(1, 2).reshape(B, T, C))


class Net(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.blocks = nn.ModuleList(Attn(d, 8) for _ in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return x


model = Net(256, 2).cuda().to(torch.bfloat16)
cmodel = torch.compile(model)
for _ in range(2):
    x = torch.randn(8, 512, 256, device="cuda", dtype=torch.bfloat16,
                    requires_grad=True)
    cmodel(x).float().square().mean().backward()
g = torch.cuda.default_generators[0]
c = g.clone_state()
print("clone", c.device, isinstance(c, torch.Generator))
print("peak", torch.cuda.max_memory_allocated())
