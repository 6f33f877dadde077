#!/bin/sh
# memsim record --fake, a compiled region inside selective activation
# checkpointing (torchtitan's layout: each block checkpointed with an op
# policy that saves aten.mm.default's outputs, the block's attention
# compiled).  Inductor's wrapper calls a GEMM as an ExternKernelOut,
# extern_kernels.mm(a, b, out=buf): the policy, which sees the compiled
# code's ops at run time (TorchDispatchMode.ignore_compile_internals),
# sees aten.mm.out, not in its list, so the compiled attention's GEMM
# outputs are recomputed in backward, not held; eager blocks' are held.
# The recording had run the extern kernels by their functional overload
# and held them.  The program prints the memory its forward leaves (the
# saved activations).  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/sac.py" <<'PY'
import sys
from functools import partial
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import (checkpoint, CheckpointPolicy,
                                    create_selective_checkpoint_contexts)


def policy(ctx, func, *args, **kwargs):
    if func is torch.ops.aten.mm.default:
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


class Attn(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.h = h

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, D // self.h) \
            .permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(B, T, D))


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.attn = Attn(d, h)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(),
                                 nn.Linear(2 * d, d))

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


blocks = nn.ModuleList(Block(128, 4) for _ in range(2)).cuda()
if sys.argv[1] == "compiled":
    for b in blocks:
        b.attn = torch.compile(b.attn)
ctx = partial(create_selective_checkpoint_contexts, policy)
x = torch.randn(4, 128, 128, device="cuda", requires_grad=True)
for step in range(2):
    base = torch.cuda.memory_allocated()
    y = x
    for b in blocks:
        y = checkpoint(b, y, use_reentrant=False, context_fn=ctx)
    print(sys.argv[1], step, torch.cuda.memory_allocated() - base)
    y.sum().backward()
PY
for m in eager compiled; do
	(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o $m.csv -- "$PY" sac.py $m) \
		>"$tmp/$m.out" 2>&1 || fail "record $m: $(tail -3 "$tmp/$m.out")"
done
# eager: each block's two mm outputs held (4 x 128 x 384 and 4 x 128 x
# 128 fp32: 1 MiB), with what the policy saves of attention; compiled:
# the mm outputs recomputed, 2 MiB less
got=$(grep -h "^eager 1 \|^compiled 1 " "$tmp/eager.out" "$tmp/compiled.out" | tr '\n' ' ')
want="eager 1 2359296 compiled 1 262144 "
[ "$got" = "$want" ] || fail "saved: $got, want $want"
finish recorder_compile_sac
