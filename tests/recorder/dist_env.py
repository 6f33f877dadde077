"""init_process_group by env:// (named, or by default) in a script run
without a launcher, as RT-DETR's dist_utils.setup_distributed does: with
no RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in the environment the
real call raises ValueError at the rendezvous, and the script goes on
without a process group.  Prints what happened, then allocates 4 MiB
(and 4 MiB more, a DDP bucket's worth of difference, only if a process
group was made).

    python3 dist_env.py default|env|env-rank|tcp"""
import sys

import torch
import torch.distributed as dist

how = sys.argv[1]
try:
    if how == "default":
        dist.init_process_group(backend="nccl")
    elif how == "env":
        dist.init_process_group(init_method="env://")
    elif how == "env-rank":
        dist.init_process_group("nccl", init_method="env://", rank=0,
                                world_size=1)
    else:
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29511",
                                rank=0, world_size=1)
    print("initialized", dist.get_world_size())
except ValueError as e:
    print("refused:", e)
x = torch.empty(1 << 20, device="cuda")
if dist.is_available() and dist.is_initialized():
    y = torch.empty(1 << 20, device="cuda")
torch.cuda.synchronize()
