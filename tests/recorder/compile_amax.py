"""A compiled fp8 tensorwise cast of a computed value, as fp8 training
scales a gradient: python3 compile_amax.py MODE (Program._across_
reduction).  MODE many: the value is computed from five bf16 inputs, so
Inductor stores it (five loads, read by two kernels: the amax and the
cast); one: from one input, so both kernels compute it again.  Each
input has 2^26 elements; prints the allocator's peaks."""
import sys

import torch


def cast(g):
    amax = g.abs().max()
    scale = 448.0 / amax.clamp(min=1e-12)
    return (g * scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), amax


@torch.compile(dynamic=False)
def many(a, b, c, d, e):
    return cast((a * b + c * d + e).float())


@torch.compile(dynamic=False)
def one(a):
    return cast(torch.tanh(a.float() / 15.0) * 15.0)


n = 1 << 26
mode = sys.argv[1]
xs = [torch.randn(n, device="cuda", dtype=torch.bfloat16)
      for _ in range(5 if mode == "many" else 1)]
f = many if mode == "many" else one
for _ in range(2):
    out, amax = f(*xs)
    del out, amax
torch.cuda.synchronize()
print("peaks", mode, torch.cuda.max_memory_allocated(),
      torch.cuda.max_memory_reserved())
