"""A launcher as I-JEPA's main.py has it: the start method set to spawn,
one multiprocessing.Process a GPU, whose target trains with DDP over a
process group of one (static_graph, or find_unused_parameters with
"unused") from a DataLoader with two workers, spawned too.  "two" starts
a second such process.  Prints what the H200 prints (the memory lines
from the trainer, the exit code from the launcher)."""
import multiprocessing as mp
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((256,), float(i)), i % 10


def train(rank, world, unused):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29533"
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 10)).cuda()
    kw = {"find_unused_parameters": True} if unused else {"static_graph": True}
    ddp = DistributedDataParallel(model, **kw)
    opt = torch.optim.Adam(ddp.parameters())
    for x, y in DataLoader(Rows(), batch_size=16, num_workers=2):
        loss = torch.nn.functional.cross_entropy(ddp(x.cuda()), y.cuda())
        loss.backward()
        opt.step()
        opt.zero_grad()
    print("allocated", torch.cuda.memory_allocated(),
          "peak", torch.cuda.max_memory_allocated(), flush=True)
    dist.destroy_process_group()
    if unused:
        sys.exit(3)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    unused = "unused" in sys.argv[1:]
    procs = [mp.Process(target=train, args=(0, 1, unused))
             for _ in range(2 if "two" in sys.argv[1:] else 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        print("exitcode", p.exitcode, "alive", p.is_alive())
