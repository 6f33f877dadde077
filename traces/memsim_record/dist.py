"""--world-size N --rank R: one rank of an N-GPU job, no GPU and no peers.

torch.distributed.init_process_group() is answered with PyTorch's fake
process group (torch.testing._internal.distributed.fake_pg: every
collective completes at once and moves no data), so DDP,
ZeroRedundancyOptimizer and FSDP allocate what they allocate on one rank:
their buckets, flat parameters and gather buffers go through the caching
allocator as the real ones do.  RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT are set for scripts that read them; the rank sees one GPU,
so LOCAL_RANK is 0 and LOCAL_WORLD_SIZE 1 (as with CUDA_VISIBLE_DEVICES
set per rank), and fake.py makes any cuda:N that GPU.  What is done here
beyond the fake process group: DDP's reducer (_Reducer below), and a
DeviceMesh built from real CPU tensors (FSDP2, DTensor), and FSDP's
shards made for this rank only (shards.py).
"""
import os

from . import shards


def install(torch, opt, rec, env=True):
    if env:
        os.environ.update({"RANK": str(opt.rank), "LOCAL_RANK": "0",
                           "WORLD_SIZE": str(opt.world_size),
                           "LOCAL_WORLD_SIZE": "1",
                           "MASTER_ADDR": "127.0.0.1",
                           "MASTER_PORT": "29500"})
    patch_spawn(torch, opt)
    shards.install(torch)
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
    # init_device_mesh with no process group made yet starts the default
    # one itself (DeviceMesh._setup_world_group_and_device), by the name
    # device_mesh.py imported: the real one waited for the other ranks
    # (PyTorch's tensor_parallel_example.py hung).
    from torch.distributed import device_mesh as dm
    if hasattr(dm, "init_process_group"):
        dm.init_process_group = init_process_group
    # A DeviceMesh computes this rank's coordinates from its mesh tensor
    # (torch.arange over the ranks, made on the CPU), whose values fake
    # tensors do not have: the mesh is built from real CPU tensors, with
    # the fake mode set aside.  A fake mesh tensor is taken to be the
    # ranks in order (init_device_mesh's torch.arange).
    from torch._subclasses.fake_tensor import FakeTensor, \
        unset_fake_temporarily
    orig_mesh_init = dm.DeviceMesh.__init__

    def real(t):
        if isinstance(t, FakeTensor):
            with unset_fake_temporarily():
                return torch.arange(t.numel(), dtype=t.dtype,
                                    device="cpu").view(t.shape)
        return t

    def mesh_init(self, *a, **k):
        a = tuple(real(x) for x in a)
        k = {n: real(x) for n, x in k.items()}
        with unset_fake_temporarily():
            orig_mesh_init(self, *a, **k)

    dm.DeviceMesh.__init__ = mesh_init
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

    def hook(ddp_self, bucket):
        buf = bucket.buffer()
        try:
            ddp_self._memsim_buckets.add(id(buf.untyped_storage()))
        except Exception:
            pass
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    class _NoLog:
        """DDP's C++ logger times iterations with CUDA events."""

        def __getattr__(self, name):
            return lambda *a, **k: None

    class _Reducer:
        """The reducer, with two of its steps done here.

        prepare_for_forward() only counts iterations, and the count turns
        on the runtime statistics, whose timer on a CUDA build records CUDA
        events (c10d's CudaTimer): with no GPU, that is "no CUDA-capable
        device".  It is not called, so no statistics are taken; nothing
        is allocated either way.

        Reducer::rebuild_buckets() runs before the forward that follows
        the first backward that reduces (not one under no_sync or with
        require_backward_grad_sync off, whose hooks the reducer ignores):
        that backward's order of ready gradients, cut by
        compute_bucket_assignment_by_size into a first bucket of
        first_bucket_bytes_cap (1 MiB) and then bucket_cap_mb (25 MiB)
        ones; the old bucket buffers are freed and the new ones allocated
        (initialize_buckets).  The real one agrees on the order across
        ranks by reading a tensor (sync_bucket_indices), which fake
        tensors cannot: here the trace gets the same frees and
        allocations, and the reducer goes on with its old buffers, of the
        same total size."""

        def __init__(self, r, ddp_self):
            object.__setattr__(self, "_r", r)
            object.__setattr__(self, "_ddp", ddp_self)
            object.__setattr__(self, "_rebuilt", False)
            object.__setattr__(self, "_new", [])

        def prepare_for_forward(self):
            return None

        def prepare_for_backward(self, *a, **k):
            # DDP's _post_forward, where the backward will reduce (not
            # under no_sync, nor with require_backward_grad_sync off):
            # the reducer expects its autograd hooks
            # (expect_autograd_hooks_), and only those hooks give the
            # order a rebuild takes (push_rebuilt_params)
            object.__setattr__(self._ddp, "_memsim_expect", True)
            return self._r.prepare_for_backward(*a, **k)

        def _rebuild_buckets(self):
            d = self._ddp
            order = d._memsim_ready
            if self._rebuilt or not order or \
                    (d.find_unused_parameters and not d.static_graph):
                return False
            object.__setattr__(self, "_rebuilt", True)
            cfg = getattr(d, "_bucket_config", None)
            first = getattr(cfg, "first_bucket_bytes_cap",
                            dist._DEFAULT_FIRST_BUCKET_BYTES)
            limits = [first, d.bucket_bytes_cap]
            indices, _ = dist._compute_bucket_assignment_by_size(
                order, limits, [False] * len(order))
            for key in sorted(d._memsim_buckets):
                rec.free(key)
                rec.retired.add(key)
            for idx in indices:
                n = sum(order[i].numel() for i in idx)
                self._new.append(torch.empty(
                    n, dtype=order[idx[0]].dtype,
                    device=order[idx[0]].device))
            return True

        def __getattr__(self, name):
            return getattr(self._r, name)

        def __setattr__(self, name, value):
            setattr(self._r, name, value)

    orig_pre_forward = ddp.DistributedDataParallel._pre_forward

    def pre_forward(self, *a, **k):
        # a forward's backward reduces only if its _post_forward says so
        # (prepare_for_backward, above): a micro-step of gradient
        # accumulation that turns the sync off gives no order
        self._memsim_expect = False
        return orig_pre_forward(self, *a, **k)

    def init(self, *a, **k):
        orig_init(self, *a, **k)
        self._memsim_buckets = set()
        self._memsim_ready = []
        self._memsim_expect = False
        self.register_comm_hook(self, hook)
        self.logger = _NoLog()
        self.reducer = _Reducer(self.reducer, self)

        def ready(p):
            # the first reducing backward's order of ready gradients
            if self._memsim_expect and not self.reducer._rebuilt and \
                    all(q is not p for q in self._memsim_ready):
                self._memsim_ready.append(p)

        for p in self.module.parameters():
            if p.requires_grad and \
                    p not in getattr(self, "parameters_to_ignore", ()):
                p.register_post_accumulate_grad_hook(ready)

    ddp.DistributedDataParallel.__init__ = init
    ddp.DistributedDataParallel._pre_forward = pre_forward


def install_single(torch, opt, rec):
    """A recording without --world-size of a script that starts a
    process group all the same (`init_process_group("nccl", rank=0,
    world_size=1)`, DDP on one GPU, or its ranks from
    torch.multiprocessing.spawn over torch.cuda.device_count()): the first
    init_process_group installs what --world-size 1 does, the environment
    aside (a script that decides by RANK whether to start one must not be
    told to).  Until then nothing of torch.distributed is patched."""
    import torch.distributed as dist
    orig = dist.init_process_group
    done = []

    def init_process_group(*a, **k):
        if not done:
            done.append(True)
            dist.init_process_group = orig
            install(torch, opt, rec, env=False)
        return dist.init_process_group(*a, **k)

    import functools
    dist.init_process_group = functools.wraps(orig)(init_process_group)
    patch_spawn(torch, opt)


class _Spawned:
    """torch.multiprocessing's ProcessContext for the rank run in this
    process: nothing left to join."""
    processes = ()
    error_files = ()

    def pids(self):
        return []

    def join(self, timeout=None, grace_period=None):
        return True


def patch_spawn(torch, opt):
    """torch.multiprocessing.spawn and start_processes (a DDP script's
    one process a GPU): the recording is one rank's, so this process runs
    fn(--rank, *args) itself, as the spawned process of that rank would,
    and starts none (a child would start without the recorder, on the
    real CUDA).  nprocs must be the ranks of the recording, --world-size:
    otherwise a one-line error says so."""
    import sys
    import torch.multiprocessing as tmp
    mod = sys.modules.get("torch.multiprocessing.spawn")
    if getattr(tmp.start_processes, "_memsim", False):
        return

    def start_processes(fn, args=(), nprocs=1, join=True, daemon=False,
                        start_method="spawn"):
        if nprocs != opt.world_size:
            raise RuntimeError(
                "memsim record: torch.multiprocessing starts %d processes, "
                "one a rank: record with --world-size %d (the recording "
                "is one rank's, --rank)" % (nprocs, nprocs))
        fn(opt.rank, *args)
        return None if join else _Spawned()

    def spawn(fn, args=(), nprocs=1, join=True, daemon=False,
              start_method="spawn"):
        return start_processes(fn, args, nprocs, join, daemon, start_method)

    start_processes._memsim = True
    for m in (tmp, mod):
        if m is not None:
            if hasattr(m, "start_processes"):
                m.start_processes = start_processes
            if hasattr(m, "spawn") and callable(getattr(m, "spawn")):
                m.spawn = spawn
