"""One rank of a data-parallel training job, for memsim record --world-size:
    torchrun --nproc-per-node N dist_train.py MODE [STEPS]
MODE: ddp (DistributedDataParallel, bucket_cap_mb 25), zero
(ZeroRedundancyOptimizer over AdamW, ZeRO-1), fsdp (FullyShardedDataParallel,
one unit per block, FULL_SHARD) or fsdp2 (fully_shard per block and the root).
Eight Linear(1024, 1024)+ReLU blocks and a Linear(1024, 10) head, fp32,
batch 64, AdamW.  Prints the figures the real run reaches."""
import os
import sys
import torch
import torch.nn as nn
import torch.distributed as dist

MODE = sys.argv[1] if len(sys.argv) > 1 else "ddp"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
D, L, B = 1024, 8, 64

dist.init_process_group("nccl")
rank = dist.get_rank()
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local)
dev = torch.device("cuda", local)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(D, D)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.head = nn.Linear(D, 10)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


torch.manual_seed(0)
net = Net()
if MODE == "ddp":
    m = nn.parallel.DistributedDataParallel(net.to(dev), device_ids=[local])
    opt = torch.optim.AdamW(m.parameters())
elif MODE == "zero":
    from torch.distributed.optim import ZeroRedundancyOptimizer
    m = nn.parallel.DistributedDataParallel(net.to(dev), device_ids=[local])
    opt = ZeroRedundancyOptimizer(m.parameters(),
                                  optimizer_class=torch.optim.AdamW)
elif MODE == "fsdp":
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    m = FSDP(net, auto_wrap_policy=ModuleWrapPolicy({Block}),
             device_id=dev)
    opt = torch.optim.AdamW(m.parameters())
elif MODE == "fsdp2":
    from torch.distributed.fsdp import fully_shard
    net.to(dev)
    for b in net.blocks:
        fully_shard(b)
    m = fully_shard(net)
    opt = torch.optim.AdamW(m.parameters())
else:
    sys.exit("unknown mode " + MODE)

for _ in range(STEPS):
    x = torch.randn(B, D, device=dev)
    y = torch.randint(0, 10, (B,), device=dev)
    loss = nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
torch.cuda.synchronize()
print("rank %d %s max_memory_allocated %d max_memory_reserved %d" % (
    rank, MODE, torch.cuda.max_memory_allocated(),
    torch.cuda.max_memory_reserved()), file=sys.stderr)
dist.destroy_process_group()
