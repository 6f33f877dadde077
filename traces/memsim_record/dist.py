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
import functools
import os
import sys

from . import shards


def _store(dist, world):
    """The default group's store: a HashStore's keys in this process
    (c10d's Store, in Python), where a store-based barrier
    (init_process_group and new_group under TORCH_DIST_INIT_BARRIER=1:
    OLMo-core sets it) finds every rank arrived, the job's other ranks
    being as this one; PyTorch's FakeStore has no add, and the barrier
    stopped the recording ("Tried to call pure virtual function
    ::c10d::Store::add")."""
    from torch.distributed.distributed_c10d import STORE_BASED_BARRIER_PREFIX

    class Store(dist.Store):
        def __init__(self):
            super().__init__()
            self.keys = dist.HashStore()

        def add(self, key, value):
            n = self.keys.add(key, value)
            return world if STORE_BASED_BARRIER_PREFIX in key else n

        def set(self, key, value):
            self.keys.set(key, value)

        def get(self, key):
            return self.keys.get(key)

        def check(self, keys):
            return self.keys.check(keys)

        def wait(self, keys, timeout=None):
            if timeout is None:
                return self.keys.wait(keys)
            return self.keys.wait(keys, timeout)

        def compare_set(self, key, expected, desired):
            return self.keys.compare_set(key, expected, desired)

        def delete_key(self, key):
            return self.keys.delete_key(key)

        def num_keys(self):
            return self.keys.num_keys()

    return Store()


def install(torch, opt, rec, env=True):
    if env:
        os.environ.update({"RANK": str(opt.rank), "LOCAL_RANK": "0",
                           "WORLD_SIZE": str(opt.world_size),
                           "LOCAL_WORLD_SIZE": "1",
                           "MASTER_ADDR": "127.0.0.1",
                           "MASTER_PORT": "29500"})
    patch_spawn(torch, opt, rec)
    shards.install(torch)
    import torch.distributed as dist
    orig = dist.init_process_group
    asked = {}

    def init_process_group(backend=None, *a, **k):
        k.pop("store", None)
        k.pop("init_method", None)
        k["rank"] = opt.rank
        k["world_size"] = opt.world_size
        asked["backend"] = backend
        # (the Python store lives as long as the group: c10d holds its
        # C++ half only, whose methods are the Python object's)
        asked["store"] = _store(dist, opt.world_size)
        return orig("fake", store=asked["store"], **k)

    dist.init_process_group = init_process_group
    # get_backend() asked by the program (or a library of it) is the
    # backend it asked for, as the real group's: "nccl", or
    # "cpu:gloo,cuda:nccl" for none (OLMo-core's get_default_device takes
    # the device from it and refused "fake").  PyTorch's own calls get
    # the fake group's name, which they choose by (FSDP's hybrid sharding
    # makes its groups with it).
    orig_backend = dist.get_backend

    def get_backend(group=None):
        got = orig_backend(group)
        if got != "fake" or "backend" not in asked or \
                "/torch/" in sys._getframe(1).f_code.co_filename:
            return got
        want = asked["backend"] or "cpu:gloo,cuda:nccl"
        return dist.Backend(want) if isinstance(want, str) else got

    dist.get_backend = functools.wraps(orig_backend)(get_backend)
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
    # dist._broadcast_coalesced (c10d's broadcast_coalesced, comm.cpp's
    # BroadcastWork): the tensors flattened into one bucket
    # (flatten_dense_tensors, a cat), the bucket broadcast from rank SRC,
    # then each tensor copy_'d back from its slice of it (finish()).
    # DDP's constructor syncs every parameter and buffer so
    # (_sync_module_states, of their detach()es), and its forward the
    # buffers (broadcast_buffers).  Where this rank is SRC, the broadcast
    # leaves the bucket as this rank made it, so each tensor gets back
    # its own values; but a bucket is mostly beyond the size whose values
    # are followed (docs/recording-values.md, rule 1), and the copy_ from
    # it counted as a write of unknown values to each tensor's storage,
    # which made what was known of every tensor on it stale (a small
    # weight loaded from a checkpoint, a buffer of known constants).  The
    # storages' write counts are set back after the call: no values
    # changed.  Under --values cpu the shadows follow the copy_ itself.
    orig_bc = getattr(dist, "_broadcast_coalesced", None)

    def broadcast_coalesced(process_group, tensors, buffer_size, src=0,
                            *a, **k):
        kn = getattr(rec, "known", None)
        counts = None
        try:
            root = src == process_group.rank()
        except Exception:
            root = False
        if kn is not None and root and not (
                kn.values is not None and kn.values.cpu):
            counts = _write_counts(kn, tensors)
        out = orig_bc(process_group, tensors, buffer_size, src, *a, **k)
        if counts is not None:
            _set_write_counts(kn, counts)
        return out

    if orig_bc is not None:
        dist._broadcast_coalesced = broadcast_coalesced
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
        stale = ddp_self.reducer._stale
        if stale:
            # the first reduction after a rebuild: the old buckets go at
            # the end of this backward (_rebuild_buckets below)
            object.__setattr__(ddp_self.reducer, "_stale", [])

            def drop():
                for key in stale:
                    rec.free(key)
                    rec.retired.add(key)
            torch.autograd.Variable._execution_engine.queue_callback(drop)
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
        same total size.

        With static_graph the old buffers outlive the rebuild, by the
        clock (on the H200, a small MLP's back-to-back steps freed them
        two backwards later, the same with a 0.5 s pause after each
        backward at the rebuild; I-JEPA's ViT-S in the backward that
        followed; without static_graph, at the rebuild every time): the
        recording frees them at the end of the backward that follows the
        rebuild."""

        def __init__(self, r, ddp_self):
            object.__setattr__(self, "_r", r)
            object.__setattr__(self, "_ddp", ddp_self)
            object.__setattr__(self, "_rebuilt", False)
            object.__setattr__(self, "_new", [])
            object.__setattr__(self, "_stale", [])

        def prepare_for_forward(self):
            return None

        def prepare_for_backward(self, *a, **k):
            # DDP's _post_forward, where the backward will reduce (not
            # under no_sync, nor with require_backward_grad_sync off):
            # the reducer expects its autograd hooks
            # (expect_autograd_hooks_), and only those hooks give the
            # order a rebuild takes (push_rebuilt_params)
            # With static_graph the first such backward gives none: its
            # autograd hooks only count (Reducer::autograd_hook returns
            # while static_graph_first_iteration(); delay_all_reduce
            # reduces at its end), so the order is the second's and the
            # rebuild comes a forward later
            d = self._ddp
            object.__setattr__(d, "_memsim_backwards",
                               d._memsim_backwards + 1)
            object.__setattr__(d, "_memsim_expect", not (
                d.static_graph and d._memsim_backwards == 1))
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
            if d.static_graph:
                object.__setattr__(self, "_stale",
                                   sorted(d._memsim_buckets))
            else:
                for key in sorted(d._memsim_buckets):
                    rec.free(key)
                    rec.retired.add(key)
            d._memsim_buckets = set()
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
        self._memsim_backwards = 0
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


def _write_counts(kn, tensors):
    """{storage id: (known.py's write count, values.py's)} of TENSORS'
    storages, None where it has none."""
    gen = kn.values.gen if kn.values is not None else {}
    counts = {}
    for t in tensors:
        try:
            k = id(t.untyped_storage())
        except Exception:
            continue
        counts[k] = (kn.writes.get(k), gen.get(k))
    return counts


def _set_write_counts(kn, counts):
    gen = kn.values.gen if kn.values is not None else None
    for k, (w, g) in counts.items():
        if w is None:
            kn.writes.pop(k, None)
        else:
            kn.writes[k] = w
        if gen is not None:
            if g is None:
                gen.pop(k, None)
            else:
                gen[k] = g


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
            env_rendezvous_check(orig, a, k)
            done.append(True)
            dist.init_process_group = orig
            install(torch, opt, rec, env=False)
        return dist.init_process_group(*a, **k)

    dist.init_process_group = functools.wraps(orig)(init_process_group)
    patch_spawn(torch, opt, rec)


def env_rendezvous_check(orig, a, k):
    """Raise what init_process_group's env:// rendezvous raises when the
    launcher's environment is missing (torch/distributed/rendezvous.py,
    _env_rendezvous_handler: RANK unless rank is given, WORLD_SIZE unless
    world_size is, then MASTER_ADDR and MASTER_PORT, each non-empty).
    env:// is the method when neither init_method nor store is given
    (distributed_c10d.init_process_group).  A script run as `python3
    train.py` that tries a process group and goes on without one when
    that fails (RT-DETR's dist_utils.setup_distributed) must take the
    same path here as on the GPU, not get the fake group."""
    import inspect
    import os
    from urllib.parse import urlparse, parse_qs
    try:
        b = inspect.signature(orig).bind(*a, **k)
    except TypeError:
        return      # the real call reports it
    args = b.arguments
    if args.get("store") is not None or args.get("backend") == "fake":
        return
    url = args.get("init_method") or "env://"
    if not isinstance(url, str) or urlparse(url).scheme != "env":
        return
    query = parse_qs(urlparse(url).query)
    need = []
    if "rank" not in query and args.get("rank", -1) == -1:
        need.append("RANK")
    if "world_size" not in query and args.get("world_size", -1) == -1:
        need.append("WORLD_SIZE")
    for var in need + ["MASTER_ADDR", "MASTER_PORT"]:
        if not os.environ.get(var):
            raise ValueError(
                "Error initializing torch.distributed using env:// "
                "rendezvous: environment variable %s expected, but not set"
                % var)


class _Spawned:
    """torch.multiprocessing's ProcessContext for the rank run in this
    process: nothing left to join."""
    processes = ()
    error_files = ()

    def pids(self):
        return []

    def join(self, timeout=None, grace_period=None):
        return True


def patch_spawn(torch, opt, rec):
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
    patch_process(opt, rec)


class _Ran:
    """multiprocessing's Popen for a Process whose target ran in this
    process (patch_process): ended, with its exit status."""
    sentinel = None

    def __init__(self, code):
        self.returncode = code
        self.pid = os.getpid()

    def poll(self, flag=0):
        return self.returncode

    def wait(self, timeout=None):
        return self.returncode

    def terminate(self):
        pass

    kill = terminate
    close = terminate


def _own(fn, script):
    """Whether FN is the script's own code: defined in it or in a module
    beside it (not PyTorch's, the standard library's or a package's)."""
    import sys
    name = getattr(fn, "__module__", None)
    if name in ("__main__", "__mp_main__"):
        return True
    path = getattr(sys.modules.get(name), "__file__", None)
    if not path:
        return False
    here = os.path.dirname(os.path.abspath(script))
    return os.path.dirname(os.path.abspath(path)) == here


def patch_process(opt, rec):
    """A multiprocessing.Process of the script's own, started with the
    spawn or forkserver method before the script's first GPU allocation:
    a launcher's, whose child is the one to use the GPU (I-JEPA's main.py
    starts one a GPU so and waits for none; PyTorch's "Writing
    Distributed Applications" tutorial too, and joins them).  Like
    torch.multiprocessing.spawn above, the recording is one rank's:
    this process runs the target of the --rank-th such start() itself,
    to its end, as that child would, and starts none (a child would
    start without the recorder, on the real CUDA: nothing recorded, or
    "no CUDA" on a machine without).  The Process then reads as ended:
    exitcode 0, or the code of a SystemExit the target raised; any other
    error stops the recording with its traceback.  Processes of
    PyTorch's or a package's own (DataLoader workers), those started by
    fork (which shares the recording) and those started once the script
    holds GPU memory (pytorch/examples' mnist_hogwild hands its CUDA
    model to them; host.patch_process_send refuses the tensor) start as
    before."""
    import multiprocessing.process as mpp
    P = mpp.BaseProcess
    if getattr(P.start, "_memsim", False):
        return
    orig = P.start
    started = [0]

    def start(self):
        if _method(self) not in ("spawn", "forkserver") or \
                not _own(self._target, opt.script) or \
                (not started[0] and
                 any(r[0] == "alloc" for r in rec.rows)):
            # (once one rank's ran here, the next start()s are ranks too)
            return orig(self)
        k = started[0]
        started[0] += 1
        if k >= opt.world_size:
            raise RuntimeError(
                "memsim record: the script starts a %s process of its "
                "own (multiprocessing.Process, target %s) beyond "
                "--world-size %d: record with --world-size N, N the "
                "processes it starts (the recording is one rank's, "
                "--rank)" % (ordinal(k + 1),
                             getattr(self._target, "__qualname__", "?"),
                             opt.world_size))
        code = 0
        if k == opt.rank:
            try:
                self.run()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else \
                    (0 if e.code is None else 1)
        self._popen = _Ran(code)
        self._sentinel = None

    start._memsim = True
    P.start = start


def _method(proc):
    """The start method PROC starts with: its context's, else the one
    set, else the platform's default (asked without setting it, as
    get_start_method() would, so that the script may still set it)."""
    import multiprocessing as mp
    return getattr(proc, "_start_method", None) or \
        mp.get_start_method(allow_none=True) or \
        mp.context._default_context._default_context._name


def ordinal(n):
    return "%d%s" % (n, {1: "st", 2: "nd", 3: "rd"}.get(
        n if n < 20 else n % 10, "th"))
