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
    # DDP compares parameter shapes across ranks by reading their data
    # (dist._verify_params_across_processes); fake tensors have none, and
    # every rank runs the same script.
    import torch.distributed.utils as du
    du._verify_param_shape_across_processes = lambda *a, **k: None
    import torch.nn.parallel.distributed as ddp
    if hasattr(ddp, "_verify_param_shape_across_processes"):
        ddp._verify_param_shape_across_processes = lambda *a, **k: None
    # The fake process group's futures hold no tensor; DDP's reducer
    # wants its bucket back, which the real all-reduce changes in place
    # (no new allocation), so a hook hands the bucket back at once.
    orig_init = ddp.DistributedDataParallel.__init__

    def hook(state, bucket):
        fut = torch.futures.Future()
        fut.set_result(bucket.buffer())
        return fut

    class _NoLog:
        """DDP's C++ logger times iterations with CUDA events."""

        def __getattr__(self, name):
            return lambda *a, **k: None

    class _Reducer:
        """The reducer, but buckets are not rebuilt after the first
        iteration: the rebuild agrees on bucket order across ranks by
        reading tensors (sync_bucket_indices).  The buckets keep their
        construction order and the same total size."""

        def __init__(self, r):
            object.__setattr__(self, "_r", r)

        def _rebuild_buckets(self):
            return False

        def __getattr__(self, name):
            return getattr(self._r, name)

        def __setattr__(self, name, value):
            setattr(self._r, name, value)

    def init(self, *a, **k):
        orig_init(self, *a, **k)
        self.register_comm_hook(None, hook)
        self.logger = _NoLog()
        self.reducer = _Reducer(self.reducer)

    ddp.DistributedDataParallel.__init__ = init
