"""Private-pool rows for `memsim record --gpu`.

The allocator's own trace (torch.cuda.memory._record_memory_history) has no
entry for CUDA graph captures or MemPools, yet they decide where blocks go
(docs/pytorch-allocator.md section 1.4).  The recorder wraps the calls that
drive CUDACachingAllocator's private pools and notes each one with the
length of the device trace at that moment (so it merges exactly, not by
time):

- ``torch.cuda.MemPool()``: createOrIncrefPool -> ``pool_create``, whose
  size holds the pool's flags: 1 when the pool has an allocator of its own
  (``MemPool(allocator)``, a CUDAPluggableAllocator: its segments come
  from that allocator's malloc, not cudaMalloc), 2 for ``use_on_oom``
  (setUseOnOOM: malloc falls back on its cached blocks before an OOM), 4
  for ``no_split`` (setNoSplit: should_split is false for its blocks);
- ``CUDAGraph.capture_begin``, ``_cuda_beginAllocate*ToPool`` (what
  ``use_mem_pool`` and torch.compile's CUDA graph trees call):
  beginAllocateToPool -> ``pool_begin`` on the current stream;
- ``CUDAGraph.capture_end``, ``_cuda_endAllocateToPool``: endAllocateToPool
  -> ``pool_end``;
- ``CUDAGraph.reset`` or the graph's death after a capture, ``_cuda_releasePool``
  and the MemPool's death: releasePool -> ``pool_release``; at the
  MemPool's death its size is 1, for the emptyCache(id) ~MemPool calls
  after it;
- ``_cuda_setCheckpointPoolState`` (torch.compile's CUDA graph trees):
  setCheckpointPoolState -> ``pool_restore`` before the allocator's own
  entries for it, its size the number of ``alloc`` entries among them:
  those blocks are placed at their recorded addresses in the pool
  (setSegmentStateToCheckpoint), not found by get_free_block.  The pool is
  the one ``_cuda_getCheckpointState`` was asked for.

Pool ids (PyTorch's MempoolId_t pairs) become 1, 2, ... in order of first
use.  merge() is pure so that it can be tested without a GPU.

The same way, ``torch.cuda.empty_cache()`` (and ``torch.cuda.memory.
empty_cache``, the same function) becomes an ``empty_cache`` row, noted
before the real call so that it precedes the ``segment_free`` /
``segment_unmap`` entries of its release_cached_blocks: the device trace has
no entry for the call itself (TraceEntry::Action), and memsim's replay of a
recording (``--recording``) takes the run after the row as that call's.  The
wrapper only notes the trace's length; the allocator does what it would.
"""

ACTIONS = ("pool_create", "pool_begin", "pool_end", "pool_release",
           "pool_restore")
CALLS = ("empty_cache",)  # rows of a program's calls, no pool


class PoolEvents:
    """Events [position, action, pool key, stream, size] in call order
    (size: pool_create's flags, 1 = the pool has its own allocator, 2 =
    use_on_oom, 4 = no_split; pool_restore's count of placed blocks).  A CUDA
    graph's key is known only once its capture has ended
    (CUDAGraph::pool() checks capture_ended_), so its pool_begin is noted
    with key None and given the key at capture_end (resolve())."""

    def __init__(self, position):
        self.position = position  # () -> number of device trace entries
        self.events = []

    def note(self, action, pool, stream=0, pos=None, size=0):
        ev = [self.position() if pos is None else pos, action,
              None if pool is None else tuple(pool), stream, size]
        self.events.append(ev)
        return ev

    @staticmethod
    def resolve(ev, pool):
        ev[2] = tuple(pool)

    def numbered(self):
        """The events with PyTorch's pool ids as 1, 2, ... in order of
        first use; an event whose key never came (a capture that did not
        end) is left out."""
        ids, out = {}, []
        for pos, action, key, stream, size in self.events:
            if action in CALLS:
                out.append((pos, action, None, stream, size))
                continue
            if key is None:
                continue
            if key not in ids:
                ids[key] = len(ids) + 1
            out.append((pos, action, ids[key], stream, size))
        return out


def merge(entries, events):
    """The device trace entries (dicts) with the pool events put in place:
    an event at position p comes after the first p entries; events at one
    position keep their call order.  Each pool row gets the time of the
    entry before it (or after it, at the start).  Returns a list of rows
    (time_us, action, addr, size, stream, pool) with pool None for the
    allocator's own entries and for calls (empty_cache).  An event is
    (position, action, pool id, stream[, size]); size is pool_create's
    flags or pool_restore's count."""
    rows = []
    ev = sorted(enumerate(events), key=lambda ie: (ie[1][0], ie[0]))
    k = 0
    n = len(entries)
    for i in range(n + 1):
        while k < len(ev) and min(ev[k][1][0], n) <= i:
            pos, action, pid, stream = ev[k][1][:4]
            size = ev[k][1][4] if len(ev[k][1]) > 4 else 0
            if action not in ACTIONS and action not in CALLS:
                raise ValueError("unknown pool action %r" % (action,))
            if action in CALLS:
                pid = None
            if rows:
                t = rows[-1][0]
            elif n:
                t = entries[0].get("time_us", 0)
            else:
                t = 0
            rows.append((t, action, 0, size, stream, pid))
            k += 1
        if i < n:
            e = entries[i]
            rows.append((e.get("time_us", 0), e["action"],
                         e.get("addr", e.get("device_free", 0)), e["size"],
                         e.get("stream", 0), None))
    return rows


def write_csv(fp, rows):
    pools = any(r[5] is not None for r in rows)
    fp.write("seq,time_us,action,addr,size,stream%s\n" %
             (",pool" if pools else ""))
    for i, r in enumerate(rows):
        fp.write("%d,%d,%s,%d,%d,%d" % ((i,) + tuple(r[:5])))
        if pools:
            fp.write(",%s" % ("" if r[5] is None else r[5]))
        fp.write("\n")


def install(torch):
    """Wrap PyTorch's private-pool calls; returns the PoolEvents."""
    dev = torch.cuda.current_device()

    def position():
        return len(torch.cuda.memory._snapshot()["device_traces"][dev])

    pe = PoolEvents(position)

    def stream():
        return torch.cuda.current_stream().cuda_stream

    G = torch.cuda.graphs.CUDAGraph
    g_begin, g_end, g_reset = G.capture_begin, G.capture_end, G.reset
    g_del = getattr(G, "__del__", None)

    def capture_begin(self, *a, **k):
        s = stream()
        g_begin(self, *a, **k)
        # CUDAGraph::capture_begin first gives each CUDA generator its
        # graph-safe seed and offset (two 8-byte tensors, from the default
        # pool) and only then begins allocating to the graph's pool:
        # pool_begin goes after them.  Measured on the H200 (torch 2.11):
        # with the row there, a graph capture and a torch.compile
        # reduce-overhead run replay exactly (tests/data/pools).  The
        # position is a host-side copy of the allocator's state, no CUDA
        # work, so reading it under capture is safe.
        self._msim_begin = pe.note("pool_begin", None, s, position())

    def capture_end(self):
        g_end(self)
        self._msim_pool = tuple(self.pool())
        pe.resolve(self._msim_begin, self._msim_pool)
        pe.note("pool_end", self._msim_pool)
        self._msim_ended = True

    def release(self):
        if getattr(self, "_msim_ended", False):
            self._msim_ended = False
            pe.note("pool_release", self._msim_pool)

    def reset(self):
        release(self)
        g_reset(self)

    def gdel(self):
        try:
            release(self)
        except Exception:
            pass
        if g_del is not None:
            g_del(self)

    G.capture_begin, G.capture_end, G.reset = capture_begin, capture_end, reset
    G.__del__ = gdel

    M = torch.cuda.memory.MemPool
    m_init = M.__init__
    m_del = getattr(M, "__del__", None)

    def mp_init(self, *a, **k):
        m_init(self, *a, **k)
        # MemPool(allocator=None, use_on_oom=False, no_split=False): a pool
        # with an allocator of its own gets its segments from it
        # (allocPrimitive), not cudaMalloc; use_on_oom (setUseOnOOM) and
        # no_split (setNoSplit) are flags 2 and 4.
        def arg(i, name):
            return a[i] if len(a) > i else k.get(name)
        flags = (1 if arg(0, "allocator") is not None else 0) | \
            (2 if arg(1, "use_on_oom") else 0) | \
            (4 if arg(2, "no_split") else 0)
        pe.note("pool_create", self.id, size=flags)

    def mp_del(self):
        try:
            # ~MemPool: releasePool, then emptyCache(id), which frees the
            # pool's cached segments if that was its last use: size 1.
            pe.note("pool_release", self.id, size=1)
        except Exception:
            pass
        if m_del is not None:
            m_del(self)

    M.__init__, M.__del__ = mp_init, mp_del

    def wrap(name, action, before):
        for mod in (torch._C, torch.cuda.memory):
            f = getattr(mod, name, None)
            if f is None or getattr(f, "_msim", False):
                continue

            def w(device, pool, *a, _f=f, **k):
                if before:
                    begun.append(tuple(pool))
                    pe.note(action, pool, stream())
                r = _f(device, pool, *a, **k)
                if not before:
                    pe.note(action, pool)
                return r
            w._msim = True
            setattr(mod, name, w)

    # Older releases end a stream's pool without naming it
    # (endAllocateToPool of the pool last begun).
    begun = []

    def end_current(name):
        for mod in (torch._C, torch.cuda.memory):
            f = getattr(mod, name, None)
            if f is None or getattr(f, "_msim", False):
                continue

            def w(device, *a, _f=f, **k):
                r = _f(device, *a, **k)
                if begun:
                    pe.note("pool_end", begun[-1])
                return r
            w._msim = True
            setattr(mod, name, w)

    # Checkpointed pool states (CUDA graph trees): the pool of each state
    # object, then the restore and how many blocks it placed.
    state_pool = {}
    get_state = getattr(torch._C, "_cuda_getCheckpointState", None)
    set_state = getattr(torch._C, "_cuda_setCheckpointPoolState", None)
    if get_state is not None and not getattr(get_state, "_msim", False):
        def getcs(device, pool, *a, **k):
            st = get_state(device, pool, *a, **k)
            state_pool[id(st)] = (st, tuple(pool))
            return st
        getcs._msim = True
        torch._C._cuda_getCheckpointState = getcs
    if set_state is not None and not getattr(set_state, "_msim", False):
        def setcs(device, state, *a, **k):
            p0 = position()
            r = set_state(device, state, *a, **k)
            d = torch.cuda.current_device() if device is None else device
            new = torch.cuda.memory._snapshot()["device_traces"][d][p0:]
            n = sum(1 for e in new if e["action"] == "alloc")
            pool = state_pool.get(id(state), (None, None))[1]
            if pool is not None:
                pe.note("pool_restore", pool, stream(), pos=p0, size=n)
            return r
        setcs._msim = True
        torch._C._cuda_setCheckpointPoolState = setcs

    # torch.cuda.empty_cache(): the row, then the real call.
    ec = torch.cuda.memory.empty_cache
    if not getattr(ec, "_msim", False):
        def empty_cache():
            if torch.cuda.is_initialized():
                pe.note("empty_cache", None, stream())
            return ec()
        empty_cache._msim = True
        empty_cache.__doc__ = ec.__doc__
        torch.cuda.empty_cache = torch.cuda.memory.empty_cache = empty_cache

    end_current("_cuda_endAllocateCurrentStreamToPool")
    wrap("_cuda_beginAllocateCurrentThreadToPool", "pool_begin", True)
    wrap("_cuda_beginAllocateCurrentStreamToPool", "pool_begin", True)
    wrap("_cuda_beginAllocateToPool", "pool_begin", True)
    wrap("_cuda_endAllocateToPool", "pool_end", False)
    wrap("_cuda_releasePool", "pool_release", False)
    return pe
