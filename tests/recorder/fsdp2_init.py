"""FSDP2 with its parameters initialized on DTensors, as a model too large
for one GPU is: built on the meta device, fully_shard per layer and on the
root, moved with to_empty, then initialized shard by shard (init's random
ops on DTensors run through the higher-order operator run_dtensor_rng_op).
    torchrun --nproc-per-node N fsdp2_init.py MODE [mp]
MODE linear: three Linear layers (256x256, 256x256, 256x16), then
torch.rand_like of the first weight (a random op on a DTensor that
allocates its output: this rank's shard), one forward, backward and AdamW
step.  MODE transformer: a small Transformer (embedding 512 x 64, two
blocks of pre-norm attention and a 4x MLP, a final norm and an output
layer), batch 4 x 32 tokens; mp: MixedPrecisionPolicy (bf16 parameters,
fp32 reduction).  One AdamW step."""
import os
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy

MODE = sys.argv[1] if len(sys.argv) > 1 else "linear"
MP = "mp" in sys.argv[2:]

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.n1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.n2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.h, d // self.h) \
            .permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.n2(x))))

    def reset_parameters(self):
        for m in (self.qkv, self.proj, self.up, self.down):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        self.n1.reset_parameters()
        self.n2.reset_parameters()


class Transformer(nn.Module):
    def __init__(self, vocab=512, d=64, h=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab, bias=False)

    def forward(self, tok):
        x = self.emb(tok)
        for b in self.blocks:
            x = b(x)
        return self.out(self.norm(x))

    def reset_parameters(self):
        nn.init.normal_(self.emb.weight)
        for b in self.blocks:
            b.reset_parameters()
        self.norm.reset_parameters()
        nn.init.trunc_normal_(self.out.weight, std=0.02)


torch.manual_seed(0)
kw = {}
if MP:
    kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                           reduce_dtype=torch.float32)
with torch.device("meta"):
    if MODE == "linear":
        net = nn.Sequential(nn.Linear(256, 256), nn.Linear(256, 256),
                            nn.Linear(256, 16))
        units = list(net)
    elif MODE == "transformer":
        net = Transformer()
        units = list(net.blocks)
    else:
        sys.exit("unknown mode " + MODE)
for u in units:
    fully_shard(u, **kw)
fully_shard(net, **kw)
net.to_empty(device="cuda")
if MODE == "linear":
    for u in units:
        u.reset_parameters()
    noise = torch.rand_like(net[0].weight)
    x = torch.randn(8, 256, device="cuda")
    loss = net(x).square().mean()
else:
    net.reset_parameters()
    tok = torch.randint(0, 512, (4, 32), device="cuda")
    loss = F.cross_entropy(net(tok).flatten(0, 1).float(), tok.flatten())
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
loss.backward()
opt.step()
opt.zero_grad()
print("rank %d %s%s max_memory_allocated %d" % (
    rank, MODE, " mp" if MP else "", torch.cuda.max_memory_allocated()),
    file=sys.stderr)
dist.destroy_process_group()
