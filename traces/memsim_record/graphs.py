"""--fake: CUDA graphs and MemPools by hand, as PyTorch has them on a GPU.

A CPU build of PyTorch defines torch._C._CUDAGraph, _graph_pool_handle,
_MemPool and the _cuda_*ToPool calls as dummies that raise, so a script
that captures a graph (torch.cuda.CUDAGraph, torch.cuda.graph,
torch.cuda.make_graphed_callables, torch.cuda.graph_pool_handle) or
routes tensors to a pool (torch.cuda.MemPool, torch.cuda.use_mem_pool)
stopped at its first line.  Here PyTorch's own Python classes and context
managers (torch/cuda/graphs.py, torch/cuda/memory.py) run on bases that
do what CUDAGraph.cpp and CUDACachingAllocator.cpp do to the allocator,
and write the rows `memsim record --gpu` writes for the same program
(pools.py; docs/recording.md, "Private pools"):

- CUDAGraph::capture_begin: on a stream other than the default one (else
  PyTorch's error); the default CUDA generator's graph-safe seed and
  offset (two 8-byte tensors on the capture stream, in its default pool)
  when no other graph is registered with it, then beginAllocateToPool:
  ``pool_begin`` on the capture stream, of the pool given (another
  graph's pool(), graph_pool_handle()) or of a new one;
- capture_end: endAllocateToPool, ``pool_end``; the ops run between them
  are recorded as any op, on the capture stream (torch.cuda.graph's
  __enter__ is PyTorch's: synchronize, empty_cache (an ``empty_cache``
  row), its side stream);
- replay: nothing is allocated; what the capture wrote is written again,
  so the values known of those storages are forgotten (known.py), as at
  capture_end (a capture runs no kernel);
- reset() or the graph's death after a capture: releasePool,
  ``pool_release``, then the seed and offset are freed if no graph is
  left registered (the H200 trace of tests/data/pools/graph.real.csv);
- MemPool(allocator, use_on_oom, no_split): ``pool_create`` with the
  pool's flags (1 an allocator of its own, 2 use_on_oom, 4 no_split;
  CUDAPluggableAllocator loads its library with ctypes as on a GPU, and
  _cuda_customAllocator gives an allocator whose functions are never
  called);
  use_mem_pool: ``pool_begin`` on the current stream, ``pool_end``,
  ``pool_release``; the MemPool's death: ``pool_release`` of size 1
  (~MemPool's emptyCache(id)).

Pool ids are numbered on the Recorder (pool_row), with torch.compile's
cudagraph trees' pool (compiled.py), in order of first use.
"""
import weakref

# stream id -> the state of the graph capturing on it
CAPTURING = {}


def capturing(stream=None):
    """Whether the current stream (or STREAM) is capturing a graph."""
    from . import fake
    return (fake._CURRENT_STREAM[0] if stream is None else stream) in \
        CAPTURING


class _State:
    """A CUDAGraph's: its pool, whether its capture ended (then reset
    releases the pool), whether it holds the generator's registration, the
    storages its capture wrote."""

    def __init__(self):
        self.pool = None
        self.ended = False
        self.has_exec = False
        self.registered = False
        self.stream = None
        self.storages = set()


# tests/recorder_graphs.sh: take a CUDA build's way (copies of PyTorch's
# classes) on a CPU build
_FORCE_COPY = False


def _rebased(cls, base):
    """A copy of the Python class CLS on BASE: its functions' __class__
    cell (zero-argument super()) names the copy."""
    import types
    new = type(cls.__name__, (base,), {"__module__": cls.__module__,
                                       "__doc__": cls.__doc__})
    new.__qualname__ = cls.__qualname__

    def fix(f):
        if isinstance(f, types.FunctionType) and \
                "__class__" in f.__code__.co_freevars:
            cells = tuple(
                types.CellType(new) if n == "__class__" else c
                for n, c in zip(f.__code__.co_freevars, f.__closure__))
            g = types.FunctionType(f.__code__, f.__globals__, f.__name__,
                                   f.__defaults__, cells)
            g.__kwdefaults__ = f.__kwdefaults__
            g.__dict__.update(f.__dict__)
            g.__qualname__ = f.__qualname__
            g.__doc__ = f.__doc__
            return g
        return f

    for k, v in cls.__dict__.items():
        if k in ("__dict__", "__weakref__", "__module__", "__doc__",
                 "__qualname__"):
            continue
        if isinstance(v, staticmethod):
            v = staticmethod(fix(v.__func__))
        elif isinstance(v, classmethod):
            v = classmethod(fix(v.__func__))
        elif isinstance(v, property):
            v = property(fix(v.fget), fix(v.fset) if v.fset else None,
                         fix(v.fdel) if v.fdel else None, v.__doc__)
        else:
            v = fix(v)
        setattr(new, k, v)
    return new


def install(torch, rec, kn):
    """The bases and calls; returns a function that puts PyTorch's back."""
    from . import fake
    cur = fake._CURRENT_STREAM
    import torch.cuda.graphs as cg
    import torch.cuda.memory as cm
    C = torch._C
    registered = set()     # ids of the graphs registered with the generator
    seed = []              # the keys of the seed and offset blocks
    undo = []

    def put(obj, name, value):
        had = name in obj.__dict__
        old = obj.__dict__.get(name)
        setattr(obj, name, value)

        def back():
            if had:
                setattr(obj, name, old)
            else:
                delattr(obj, name)
        undo.append(back)

    def release(st):
        if st.ended:
            st.ended = False
            rec.pool_row("pool_release", st.pool)
        if st.registered:
            st.registered = False
            registered.discard(id(st))
            if not registered:
                # CUDAGeneratorState::unregister_graph: the last graph
                # gone, the seed and offset tensors are freed
                while seed:
                    rec.free(seed.pop(0))
        if CAPTURING.get(st.stream) is st:
            del CAPTURING[st.stream]
            kn.capture = None

    class _CUDAGraph:
        """torch._C._CUDAGraph as CUDAGraph.cpp has it, for the
        allocator."""

        def __new__(cls, keep_graph=False):
            self = object.__new__(cls)
            st = self._msim_graph = _State()
            # ~CUDAGraph calls reset()
            weakref.finalize(self, release, st)
            return self

        def capture_begin(self, pool=None, capture_error_mode="global"):
            st = self._msim_graph
            if st.has_exec:
                raise RuntimeError(
                    "This CUDAGraph instance already owns a captured graph. "
                    "To capture a new graph, create a new instance.")
            s = cur[0]
            if s == 0:
                raise RuntimeError(
                    "CUDA graphs must be captured on a non-default stream. "
                    "(However, after capture, it's ok to replay them on "
                    "the default stream.)")
            if not registered:
                # CUDAGeneratorState::register_graph: the first graph
                # registered gets the graph-safe seed and offset
                # (at::empty({1}, kLong) each), before the pool begins
                for what in ("seed", "offset"):
                    key = ("graph rng", what, id(st))
                    rec.alloc(8, "other", "CUDAGraph %s" % what, key)
                    seed.append(key)
            registered.add(id(st))
            st.registered = True
            pool = tuple(pool) if pool is not None else (0, 0)
            if pool == (0, 0):
                pool = rec.pool_handle(user_created=False)
            st.pool = pool
            st.stream = s
            rec.pool_row("pool_begin", pool, stream=s)
            CAPTURING[s] = st
            st.storages = set()
            kn.capture = st.storages

        def capture_end(self):
            st = self._msim_graph
            if cur[0] != st.stream or CAPTURING.get(st.stream) is not st:
                raise RuntimeError(
                    "Capture must end on the same stream it began on.")
            del CAPTURING[st.stream]
            kn.capture = None
            rec.pool_row("pool_end", st.pool)
            # the capture ran no kernel: what it wrote holds no value
            # known here (nor after a replay, whose inputs may differ)
            kn.rewritten(st.storages)
            st.ended = True
            st.has_exec = True

        def instantiate(self):
            if not self._msim_graph.ended:
                raise RuntimeError("capture_end() must have been called "
                                   "before calling instantiate")

        def replay(self):
            st = self._msim_graph
            if not st.ended:
                raise RuntimeError("Called CUDAGraph::replay without a "
                                   "preceding successful capture.")
            # cudaGraphLaunch: no allocation; the captured kernels write
            # their storages again
            kn.rewritten(st.storages)

        def reset(self):
            st = self._msim_graph
            release(st)
            st.has_exec = False

        def pool(self):
            st = self._msim_graph
            if not st.ended:
                raise RuntimeError("Called CUDAGraph::pool() without a "
                                   "preceding successful capture.")
            return st.pool

        def register_generator_state(self, *a, **k):
            pass

        def enable_debug_mode(self):
            pass

        def debug_dump(self, debug_path):
            pass

        def raw_cuda_graph(self):
            return 0

        def raw_cuda_graph_exec(self):
            return 0

    pool_uses = {}   # pool id -> its use count (MemPool.use_count)

    class _MemPool:
        """torch._C._MemPool: the pool's id and flags, its death."""

        def __new__(cls, *a, **k):
            return object.__new__(cls)

        def __init__(self, allocator=None, is_user_created=True,
                     use_on_oom=False, no_split=False):
            pid = self._msim_id = rec.pool_handle(bool(is_user_created))
            flags = (1 if allocator is not None else 0) | \
                (2 if use_on_oom else 0) | (4 if no_split else 0)
            rec.pool_row("pool_create", pid, size=flags)
            pool_uses[pid] = 1
            weakref.finalize(self, mempool_death, pid)

        @property
        def id(self):
            return self._msim_id

        @property
        def allocator(self):
            return None

        def use_count(self):
            return pool_uses.get(self._msim_id, 0)

    def mempool_death(pid):
        # ~MemPool: releasePool, then emptyCache(id): size 1
        pool_uses.pop(pid, None)
        rec.pool_row("pool_release", pid, size=1)

    def begin(device, mempool_id, *a, **k):
        pid = tuple(mempool_id)
        pool_uses[pid] = pool_uses.get(pid, 0) + 1
        rec.pool_row("pool_begin", pid, stream=cur[0])

    def end(device, mempool_id, *a, **k):
        rec.pool_row("pool_end", tuple(mempool_id))

    def release_pool(device, mempool_id, *a, **k):
        pid = tuple(mempool_id)
        if pool_uses.get(pid, 0) > 0:
            pool_uses[pid] -= 1
        rec.pool_row("pool_release", pid)

    def handle():
        return rec.pool_handle(user_created=True)

    class _CUDAAllocator:
        """torch._C._cuda_CUDAAllocator of a CUDAPluggableAllocator: its
        functions are never called (no memory is real); a MemPool given
        it takes its segments from it (pool_create's flag 1)."""

        def __init__(self, alloc_fn=None, free_fn=None):
            self.alloc_fn = alloc_fn
            self.free_fn = free_fn

    # PyTorch's classes keep their methods; their bases become these (a
    # CPU build's dummy bases are Python classes).  A CUDA build's are
    # C++ classes, which no Python class can replace as a base: there
    # torch.cuda's names are given a copy of PyTorch's class on this base.
    for cls, base, names in (
            (cg.CUDAGraph, _CUDAGraph, ((cg, "CUDAGraph"),
                                        (torch.cuda, "CUDAGraph"))),
            (cm.MemPool, _MemPool, ((cm, "MemPool"),
                                    (torch.cuda, "MemPool")))):
        old = cls.__bases__
        try:
            if _FORCE_COPY:
                raise TypeError("a copy asked for")
            cls.__bases__ = (base,)
        except TypeError:
            new = _rebased(cls, base)
            for mod, name in names:
                if mod.__dict__.get(name) is cls:
                    put(mod, name, new)
            continue
        undo.append(lambda cls=cls, old=old: setattr(cls, "__bases__", old))
    put(C, "_CUDAGraph", _CUDAGraph)
    put(C, "_MemPool", _MemPool)
    put(C, "_cuda_CUDAAllocator", _CUDAAllocator)
    put(C, "_cuda_customAllocator",
        lambda alloc_fn, free_fn: _CUDAAllocator(alloc_fn, free_fn))
    for mod in (C, cg):
        put(mod, "_graph_pool_handle", handle)
        put(mod, "_cuda_isCurrentStreamCapturing", capturing)
    for mod in (C, cm):
        for name, f in (("_cuda_beginAllocateCurrentThreadToPool", begin),
                        ("_cuda_beginAllocateCurrentStreamToPool", begin),
                        ("_cuda_beginAllocateToPool", begin),
                        ("_cuda_endAllocateToPool", end),
                        ("_cuda_releasePool", release_pool)):
            if mod is C or name in mod.__dict__:
                put(mod, name, f)
    if not hasattr(C, "_host_emptyCache"):
        # torch.cuda.graph's __enter__ empties the pinned host memory's
        # cache too: no GPU memory
        put(C, "_host_emptyCache", lambda: None)
    # torch.cuda.graph's own side stream, made at its first use
    put(cg.graph, "default_capture_stream", None)
    CAPTURING.clear()
    kn.capture = None

    def uninstall():
        CAPTURING.clear()
        kn.capture = None
        while undo:
            undo.pop()()
    return uninstall
