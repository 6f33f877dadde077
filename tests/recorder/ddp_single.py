"""DDP on one GPU, as DDP-ready scripts run without torchrun
(tests/recorder_dist.sh): a process group of one rank started by the
script itself (init: init_process_group("nccl", rank=0, world_size=1)),
or its ranks started by torch.multiprocessing.spawn over
torch.cuda.device_count() (spawn).  4 blocks of Linear(1024, 1024) and a
Linear(1024, 10) head, AdamW, 3 steps at batch 64.  On a GPU it prints
torch.cuda.max_memory_allocated() and max_memory_reserved() at the end
(with DDP_SNAPSHOT=FILE, the allocator's history dumped to FILE).
    python3 ddp_single.py init|spawn|accum"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world, accum=False):
    snap = os.environ.get("DDP_SNAPSHOT")
    if snap:
        torch.cuda.memory._record_memory_history(max_entries=1000000)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29541"
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    model = DDP(nn.Sequential(*layers, nn.Linear(1024, 10)).to(rank),
                device_ids=[rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(3):
        for micro in ((0, 1) if accum else (1,)):
            b = 32 if accum else 64
            if accum:
                model.require_backward_grad_sync = micro == 1
            x = torch.randn(b, 1024, device=rank)
            y = torch.randint(0, 10, (b,), device=rank)
            nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    dist.barrier()
    print("peaks %d %d" % (torch.cuda.max_memory_allocated(),
                           torch.cuda.max_memory_reserved()))
    if snap:
        torch.cuda.memory._dump_snapshot(snap)
    dist.destroy_process_group()


if __name__ == "__main__":
    if sys.argv[1] in ("init", "accum"):
        worker(0, 1, sys.argv[1] == "accum")
    else:
        mp.spawn(worker, args=(torch.cuda.device_count(),),
                 nprocs=torch.cuda.device_count(), join=True)
