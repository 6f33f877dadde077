"""--world-size N --rank R: one rank of an N-GPU job, no GPU and no peers.

torch.distributed.init_process_group() is answered with PyTorch's fake
process group (torch.testing._internal.distributed.fake_pg: every
collective completes at once and moves no data), so DDP,
ZeroRedundancyOptimizer and FSDP allocate what they allocate on one rank:
their buckets, flat parameters and gather buffers go through the caching
allocator as the real ones do.  RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR
and MASTER_PORT are set for scripts that read them.
"""
import os


def install(torch, opt, rec):
    os.environ.update({"RANK": str(opt.rank), "LOCAL_RANK": str(opt.rank),
                       "WORLD_SIZE": str(opt.world_size),
                       "LOCAL_WORLD_SIZE": str(opt.world_size),
                       "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": "29500"})
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    orig = dist.init_process_group

    def init_process_group(backend=None, *a, **k):
        k.pop("store", None)
        k.pop("init_method", None)
        k["rank"] = opt.rank
        k["world_size"] = opt.world_size
        return orig("fake", store=FakeStore(), **k)

    dist.init_process_group = init_process_group
