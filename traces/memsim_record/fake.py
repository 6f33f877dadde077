"""--fake: record a script's CUDA allocations under FakeTensorMode.

What is recorded.  Every op that touches the GPU runs on fake tensors
(shapes and dtypes only); host code runs for real (host.py,
docs/recording-boundary.md).  A dispatch mode above the fake mode sees each
op's outputs; a CUDA storage
not seen before is an allocation of its nbytes (the size PyTorch's
CUDACachingAllocator::malloc is asked for; memsim applies round_size), and
a weak reference on the storage's Python object (PyTorch keeps that object
alive as long as the StorageImpl lives) gives its death, a free_completed.

What fake tensors do not show is added by rule (kernel allocations):
- cuBLAS workspace: one per (cuBLAS handle, stream), allocated through the
  caching allocator on the first cuBLAS call and never freed
  (getNewWorkspace() in aten/src/ATen/cuda/CublasHandlePool.cpp); handles
  are per thread, so the autograd engine's device thread gets its own.
  Size: devices.cublas_workspace_bytes().
- Kernels' own temporaries, allocated after an op's outputs and freed
  before it returns (category temporary, site the kernel): cuDNN
  convolution and attention workspaces, the attention backward kernels'
  buffers, the reduction kernel's global buffer; sizes in kernels.py.

Data-dependent values get stated assumptions, counted in the trace as
`annotate` rows (category "assumption", site = the kind):
- .item() / _local_scalar_dense of a value not known (known.py tracks
  tensors whose elements all hold one known scalar): bool -> --item-bool
  (default False; an assert statement's test -> what lets the program
  go on: values.asserted), float -> 1.0 (an optimizer's step count, a logged
  loss), int -> --item-int (default 1); one line asking more than
  --item-repeats times stops the recording (a loop that never ends);
- GradScaler finds no inf or NaN: the optimizer step is taken;
- nonzero, argwhere, masked_select, unique, boolean indexing, MoE routing:
  --dynamic-fraction of the elements (default 0.5) are selected;
- torch.compile: the compiled program's buffers (compiled.py), one
  compile:inductor a compile (compile:aot_eager for PyTorch's aot_eager
  backends, compile:eager for another); one
  compile:pad_mm a matmul shape Inductor's pad_mm pass benchmarks while
  compiling (padding assumed not faster, the caches cold);
- allocator-settings:late: torch.cuda.memory._set_allocator_settings()
  after the first CUDA allocation: the replay has the settings from the
  start (Recorder.settings).
"""
import functools
import math
import os
import sys
import threading

from . import devices
from . import einsumpath
from . import host
from . import jittrace
from . import kernels
from . import known
from . import lifecycle
from .symbolic import hint as _hint
from . import values

CATEGORIES = ("parameter", "gradient", "optimizer", "activation",
              "temporary", "input", "other")


def _round_size(n):
    """The caching allocator's block for a request of N bytes
    (round_size: a multiple of 512, 512 at least)."""
    return 512 if n < 512 else (n + 511) // 512 * 512


class Recorder:
    """The trace being built: rows kept in memory, written at the end."""

    def __init__(self, opt):
        self.opt = opt
        self.rows = []        # [action, addr, size, category, site]
        self.live = {}        # id(storage) -> (row index, addr, nbytes)
        self.next_addr = 1 << 32
        self.absent = 0       # --symbolic: blocks absent at the sentinel
        self.allocated = 0
        self.peak = 0
        # the same in blocks of round_size() (512-byte multiples, 512 at
        # least): what memory_allocated() counts (a block's size)
        self.blocks = 0
        self.blocks_peak = 0
        self.assumptions = {}
        # the largest workspace of cuDNN's FFT engine where it may run
        # (Dispatch._ev_conv, assumption cudnn:fft-possible)
        self.fft_largest = 0
        self.phase_backward = 0
        self.phase_optimizer = 0
        # the phases entered, innermost last: ["o", how many calls of the
        # closure given to the optimizer step are running] or ("b",) for
        # backward
        self.phases = []
        self.module_stack = []
        self.module_names = {}
        self.seen_modules = set()
        self.workspaces = set()
        self.math_add = False  # the next add is in place (fake.py)
        self.retired = set()  # storages freed in the trace, still in use
        # (thread, keys): the frees of one call that frees in an order
        # of its own (in_alloc_order), held until it returns
        self.held = None
        self.script = None
        # Private pools (graphs.py, compiled.py): PyTorch's pool ids
        # (MempoolId_t) numbered 1, 2, ... in order of first use, as
        # `memsim record --gpu` numbers them (pools.py PoolEvents); the
        # ids a program sees, made by MemPool::graph_pool_handle: (0, n)
        # for a user's handle or MemPool, (n, 0) for a capture's own.
        self.pool_ids = {}
        self.pool_uuid = [1, 1]   # the next n of (n, 0) and of (0, n)
        self.lock = threading.Lock()
        # the allocator's settings (settings()): None until the caching
        # allocator starts, then {key: value} in the order first given
        self.conf = None
        # set_per_process_memory_fraction()'s fraction (None: not set)
        self.mem_fraction = None
        # --oom: an allocation that does not fit raises
        # torch.OutOfMemoryError (else it always succeeds)
        self.oom = False
        # without --oom: the line where the modelled allocator (without
        # it, the live blocks) first ran out of the device's memory less
        # its context (the closing note)
        self.over_at = None
        # the device's (total bytes, its CUDA context's), and the caching
        # allocator modelled beside the recording (live.py): None until
        # the first allocation, False where the library is absent
        self.device_bytes = None
        self.model = None

    # -- the allocator's settings ---------------------------------------------
    def settings(self, given=None):
        """The caching allocator's settings as the process sets them:
        read from the environment when the allocator starts (the first
        allocation here; CUDAAllocatorConfig::instance() parses
        PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_ALLOC_CONF: on the H200,
        PyTorch 2.11, with both set the first alone counts; a script's own
        os.environ[...] before its first CUDA tensor counts, one after it
        does not), then GIVEN, a string of
        torch.cuda.memory._set_allocator_settings(), on top: the options
        it names (three back to their defaults unless named, as
        parseArgs does).
        The trace's first row carries the result (write()), and `memsim
        run` replays with it, as with a snapshot's own settings.  A call
        after the first allocation changes the settings from then on on
        the GPU, from the start in the replay: assumption
        allocator-settings:late."""
        if self.conf is None:
            self.conf = {}
            env = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
            if env is None:
                env = os.environ.get("PYTORCH_ALLOC_CONF")
            _conf_merge(self.conf, env or "")
        if given is not None:
            if any(r[0] == "alloc" for r in self.rows):
                values.assume(self, "allocator-settings:late",
                              "".join(given.split()))
            # AcceleratorAllocatorConfig::parseArgs puts three options
            # back to their defaults at each call, unless it names them
            # (the H200: max_split_size_mb:32 after a call that set it and
            # roundup_power2_divisions left the divisions at 0); the
            # others keep their values
            for k in ("max_split_size_mb", "roundup_power2_divisions",
                      "garbage_collection_threshold"):
                self.conf.pop(k, None)
            _conf_merge(self.conf, given)

    # -- rows ---------------------------------------------------------------
    def alloc(self, nbytes, category, site, key=None):
        """A block of NBYTES on the current stream (the caching allocator
        keeps one pool per stream: get_free_block matches the stream)."""
        if self.conf is None:
            self.settings()
        n = _hint(nbytes)  # under --symbolic: its value at the sentinel
        if n == 0 and type(nbytes) is int:
            # allocate(0) takes no block and returns a null pointer: no
            # request (a kernel's temporary over an empty tensor)
            return 0
        with self.lock:  # the script's threads allocate too
            if n == 0 and type(nbytes) is not int:
                # --symbolic: a kernel rule's block that is not there at
                # the sentinel (kernels.OPTIONAL) but may be at other
                # values: numbered below 2^32, no address taken
                self.absent += 1
                addr = self.absent
            else:
                addr = self.next_addr
                self.next_addr += ((n + 511) // 512 + 1) * 512
        stream = _CURRENT_STREAM[0]
        if n and addr >> 32 and self.allocator() is not None:
            if self.live_request("alloc", addr, n, stream) == 1:
                if self.oom:
                    self.model.request("free_completed", addr)
                    raise self.oom_error(
                        n, self.model.get("allocated_bytes.all.current"),
                        self.model.get("reserved_bytes.all.current"))
                if self.over_at is None:
                    self.over_at = values.where()
        elif self.oom:
            self.out_of_memory(n)
        self.rows.append(["alloc", addr, nbytes, category, site, stream])
        self.allocated += n
        self.peak = max(self.peak, self.allocated)
        self.blocks += _round_size(n)
        self.blocks_peak = max(self.blocks_peak, self.blocks)
        if not self.model and not self.oom and self.over_at is None and \
                self.device_bytes is not None and \
                self.blocks > self.device_bytes[0] - self.device_bytes[1]:
            self.over_at = values.where()
        if key is not None:
            self.live[key] = (len(self.rows) - 1, addr, nbytes, stream)
        return addr

    def out_of_memory(self, n):
        """--oom without the modelled allocator (allocator()): raises
        torch.OutOfMemoryError where a block of N bytes would not fit by
        the live blocks (memory_allocated, a lower bound of what is
        reserved: no fragmentation) against the device's memory less its
        CUDA context, or past the cap of set_per_process_memory_fraction
        (which counts from the device's total)."""
        if self.blocks + _round_size(n) > self.device_limit():
            raise self.oom_error(n, self.blocks, self.blocks)

    def device_limit(self):
        """What the caching allocator may take of the device: its memory
        less the CUDA context, or set_per_process_memory_fraction's cap."""
        total, context = self.device_bytes
        return total - context if self.mem_fraction is None else \
            int(total * self.mem_fraction)

    def allocator(self):
        """The caching allocator modelled beside the recording
        (live.py), opened at the first allocation with the settings then
        in force; None where the library is absent."""
        if self.model is None:
            self.model = False
            if self.device_bytes is not None:
                from . import live
                if self.conf is None:
                    # a pool or a query before the first allocation:
                    # the settings as the allocator starts with them
                    self.settings()
                total, context = self.device_bytes
                self.model = live.Live.open(self.conf, total, context,
                                            self.mem_fraction) or False
        return self.model or None

    def live_request(self, action, addr=0, size=0, stream=0):
        """A request to the modelled allocator (0, or 1: the alloc did
        not fit); one it refuses ends the model (assumption
        allocator-model:lost), the recording goes on."""
        try:
            return self.model.request(action, addr, size, stream)
        except RuntimeError as e:
            self.model.close()
            self.model = False
            values.assume(self, "allocator-model:lost", str(e))
            return 0

    def reserved(self, peak=False):
        """memory_reserved() (PEAK: max_memory_reserved()): the modelled
        allocator's reserved bytes, or the live blocks' without it
        (assumption allocator-model:absent)."""
        if self.allocator() is not None:
            return self.model.get("reserved_bytes.all.peak" if peak else
                                 "reserved_bytes.all.current")
        if self.rows:
            values.assume(self, "allocator-model:absent", "live blocks")
        return self.blocks_peak if peak else self.blocks

    def oom_error(self, n, allocated, reserved):
        """--oom: the torch.OutOfMemoryError of an allocation of N bytes
        that did not fit, worded as CUDACachingAllocator's (raised when
        cudaMalloc fails after release_cached_blocks), ALLOCATED and
        RESERVED bytes then.  A program that catches it (Trainer's
        auto_find_batch_size, accelerate's find_executable_batch_size)
        takes the path it takes on the GPU; assumption `oom` names the
        line."""
        import torch
        size = _round_size(n)

        def gib(b):
            return "%.2f GiB" % (b / 2 ** 30) if b >= 2 ** 30 else \
                "%.2f MiB" % (b / 2 ** 20)
        values.assume(self, "oom", size)
        return torch.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate %s. GPU 0 has a total "
            "capacity of %s of which %s is free. Of the allocated memory "
            "%s is allocated by PyTorch, and %s is reserved by PyTorch but "
            "unallocated. (memsim record --oom: %s)" % (
                gib(size), gib(self.device_bytes[0]),
                gib(max(self.device_limit() - reserved, 0)), gib(allocated),
                gib(reserved - allocated),
                "the caching allocator modelled beside the recording"
                if self.model else "the live blocks, no allocator model"))

    def free(self, key):
        held = self.held
        if held is not None and held[0] == threading.get_ident():
            if key in self.live:
                held[1].append(key)
            return
        ent = self.live.pop(key, None)
        if ent is None:
            return
        _, addr, nbytes, stream = ent
        n = _hint(nbytes)
        self.allocated -= n
        self.blocks -= _round_size(n)
        if self.model and n and addr >> 32:
            self.live_request("free_completed", addr)
        self.rows.append(["free_completed", addr, nbytes, "", "", stream])

    def in_alloc_order(self, fn, *args, **kwargs):
        """FN(*ARGS, **KWARGS), a call that frees several blocks in the
        order of a hash map's slots (autocast's cache: clear_cache()
        empties a flat hash map keyed by the source tensors' TensorImpl
        addresses, which differ from run to run): its frees written in
        the order the blocks were allocated, the order the cache was
        filled.  The GPU's own order is the addresses'; the caching
        allocator's state after the call is the same in any order."""
        if self.held is not None:
            return fn(*args, **kwargs)
        self.held = (threading.get_ident(), [])
        try:
            return fn(*args, **kwargs)
        finally:
            keys = self.held[1]
            self.held = None
            keys = [k for k in dict.fromkeys(keys) if k in self.live]
            for key in sorted(keys, key=lambda k: self.live[k][0]):
                self.free(key)

    def empty_cache(self):
        """torch.cuda.empty_cache(): an `empty_cache` row where the
        program calls it (release_cached_blocks, replayed by memsim's
        policy); blocks freed before the call come before it."""
        self.rows.append(["empty_cache", 0, 0, "", "", _CURRENT_STREAM[0]])
        if self.model:
            self.live_request("empty_cache")

    def clear_blas_workspaces(self):
        """torch._C._cuda_clearCublasWorkspaces() (a program's own call,
        as Lightning's teardown makes it, or clear_cublas_manager's around
        a CUDA graph's capture): clearCublasWorkspaces() empties the
        process's maps from (handle, stream) to cuBLAS and cuBLASLt
        workspace, so every workspace is freed, whichever thread and
        stream made it, and the next GEMM on any stream allocates a new
        one (dispatch.py's blas_workspaces)."""
        ws = [k for k in self.live
              if isinstance(k, tuple) and k[:1] == ("workspace",)]
        # cuBLAS's map is cleared before cuBLASLt's
        for key in sorted(ws, key=lambda k: k[1:2] == ("lt",)):
            self.free(key)
        self.workspaces.clear()

    def pool_handle(self, user_created=True):
        """A new pool id: MemPool::graph_pool_handle(is_user_created)."""
        i = 1 if user_created else 0
        n = self.pool_uuid[i]
        self.pool_uuid[i] += 1
        return (0, n) if user_created else (n, 0)

    def pool_row(self, action, key, size=0, stream=0):
        """A private-pool row (pool_create, pool_begin, pool_end,
        pool_release) of the pool KEY; its addr the pool's number."""
        key = tuple(key)
        pid = self.pool_ids.get(key)
        if pid is None:
            pid = self.pool_ids[key] = len(self.pool_ids) + 1
        self.rows.append([action, pid, size, "", "", stream])
        if self.allocator() is not None:
            self.live_request(action, pid, size, stream)

    def assume(self, kind, value=None):
        self.assumptions[kind] = self.assumptions.get(kind, 0) + 1
        self.rows.append(["annotate", 0, 0, "assumption", kind])

    def relabel(self, tensor, category, site=None):
        """The live block that holds TENSOR's storage is CATEGORY (and
        SITE).  A wrapper subclass (DTensor: FSDP2's sharded parameter)
        holds no storage of its own: its inner tensors (the local shard)
        are relabelled instead."""
        from torch.utils._python_dispatch import \
            is_traceable_wrapper_subclass
        if is_traceable_wrapper_subclass(tensor):
            for a in tensor.__tensor_flatten__()[0]:
                self.relabel(getattr(tensor, a), category, site)
            return
        try:
            s = tensor.untyped_storage()
        except Exception:
            return
        ent = self.live.get(id(s))
        if ent is not None:
            row = self.rows[ent[0]]
            row[3] = category
            if site:
                row[4] = site

    # -- where and what -----------------------------------------------------
    def closure(self):
        """Whether the innermost phase is an optimizer step running its
        closure (LBFGS, PyTorch Lightning's training step inside
        optimizer.step(closure)): the step's pre-hook handed step() a
        wrapper of the closure that counts its calls (opt_pre), so all
        the closure does is the closure's, its forward and backward and
        what it does under no_grad after them (Lightning's
        _after_closure clips the gradients there), and only what step()
        does outside the call is the optimizer's."""
        ph = self.phases[-1] if self.phases else None
        return ph is not None and ph[0] == "o" and ph[1] > 0

    def in_optimizer(self):
        """The optimizer's own work: the innermost phase an optimizer
        step, not its closure."""
        return bool(self.phases) and self.phases[-1][0] == "o" and \
            not self.closure()

    def category(self, func_name):
        """By autograd's phase, the innermost one: an optimizer step,
        backward, a module's forward (a closure's forward and backward
        inside optimizer.step(closure) are activations and gradients)."""
        if self.in_optimizer():
            return "optimizer"
        if (self.phases and self.phases[-1][0] == "b") or \
                lifecycle.autograd_thread():
            return "gradient"
        if self.module_stack:
            return "activation"
        if self.phases:
            import torch
            if torch.is_grad_enabled():
                # the closure's own ops outside a module (its loss)
                return "activation"
            # under no_grad in the closure (the gradients' clipping):
            # what the same ops are between backward() and step()
        if func_name in ("empty", "empty_strided", "randn", "rand", "zeros",
                         "ones", "full", "randint", "arange", "_to_copy",
                         "copy_", "normal", "uniform", "scalar_tensor",
                         "lift_fresh", "lift_fresh_copy"):
            return "input"
        return "other"

    def site(self):
        if self.in_optimizer():
            return "optimizer.step"
        if self.module_stack:
            m = self.module_stack[-1]
            name = self.module_names.get(id(m)) or type(m).__name__
            return clean(name)
        if self.phase_backward or lifecycle.autograd_thread():
            node = lifecycle.autograd_node()
            if node is not None:
                return clean("backward " + node.name())
            return "backward"
        f = sys._getframe(2)
        while f is not None:
            fn = f.f_code.co_filename
            if "/torch/" not in fn and "memsim_record" not in fn and \
                    not fn.startswith("<"):
                return clean("%s:%d %s" % (os.path.basename(fn), f.f_lineno,
                                           f.f_code.co_name))
            f = f.f_back
        return "torch"

    def write(self, path):
        sym = getattr(self, "sym", None)
        if sym is not None:
            # --symbolic (symbolic.py): sizes as expressions, the range
            # where the guards hold in the header; or Refused.  And
            # where the value rules (values.py) lost their values on an op
            # (on a symbolic size they cannot compute), the rows after
            # it may not be the per-value recording's
            if sym.failed:
                raise sym.Refused(sym.failed[0])
            for r in self.rows:
                if r[0] == "annotate" and str(r[4]).startswith(
                        "values:lost"):
                    raise sym.Refused("the value rules lost their values "
                                      "(%s)" % r[4])
            head = sym.header(*sym.valid_range())
            sizes = []
            for r in self.rows:
                try:
                    sizes.append(r[2] if type(r[2]) is int
                                 else sym.text(r[2]))
                except type(sym).Refused as e:
                    raise type(e)("%s (row %d, %s %s)" % (
                        e, len(sizes), r[3], r[4]))
        with open(path, "w") as fp:
            if sym is not None:
                fp.write(head)
            fp.write("seq,time_us,action,addr,size,stream,category,site\n")
            rows = self.rows
            conf = ",".join("%s:%s" % kv for kv in (self.conf or {}).items())
            if conf:
                # the first row (fmt_csv.c reads it at the open): the
                # settings, ';' for ',' (a site holds no comma)
                rows = [["annotate", 0, 0, "allocator_settings",
                         clean(conf)]] + rows
                if sym is not None:
                    sizes = [0] + sizes
            for i, r in enumerate(rows):
                a, addr, size, cat, site = r[:5]
                if sym is not None:
                    fp.write("%d,%d,%s,%d,%s,%d,%s,%s\n" % (
                        i, i, a, addr, sizes[i], r[5] if len(r) > 5 else 0,
                        cat, site))
                    continue
                fp.write("%d,%d,%s,%d,%d,%d,%s,%s\n" % (
                    i, i, a, addr, size, r[5] if len(r) > 5 else 0, cat,
                    site))


def _conf_merge(conf, text):
    """TEXT's options (PyTorch's allocator settings: KEY:VALUE, split at
    the commas outside brackets, roundup_power2_divisions' list holding
    some; blanks dropped, as PyTorch's ConfigTokenizer drops them) into
    the dict CONF, a later value of a key replacing the earlier."""
    text = "".join(text.split())
    depth, start = 0, 0
    for i, ch in enumerate(text + ","):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth <= 0:
            opt = text[start:i]
            start = i + 1
            if opt:
                k, _, v = opt.partition(":")
                conf.pop(k, None)
                conf[k] = v


def clean(s):
    return s.replace(",", ";").replace("\n", " ")


# -- CUDA answered from the device table --------------------------------------
class _Props:
    def __init__(self, name, major, minor, total, sms, l2=None):
        self.name = name
        self.major = major
        self.minor = minor
        self.total_memory = total
        self.multi_processor_count = sms
        self.is_integrated = False
        self.is_multi_gpu_board = False
        # the device's L2 where memsim devices knows it (the H200: 60 MiB,
        # as get_device_properties() said there), else 50 MiB
        self.L2_cache_size = l2 or 50 * 1024 * 1024
        self.max_threads_per_multi_processor = 2048
        self.warp_size = 32
        self.regs_per_multiprocessor = 65536
        self.gcnArchName = ""
        # The CUDA programming guide's table of compute capabilities:
        # shared memory a block may opt in to and an SM has (Inductor,
        # Triton and attention kernels read them to pick configurations).
        smem = {(7, 0): 98304, (7, 5): 65536, (8, 0): 167936,
                (9, 0): 233472, (10, 0): 233472}.get(
                    (major, minor), 102400 if major >= 8 else 65536)
        self.shared_memory_per_block = 49152
        self.shared_memory_per_multiprocessor = smem
        self.shared_memory_per_block_optin = smem - (1024 if major >= 8
                                                     else 0)
        self.max_threads_per_block = 1024
        self.uuid = "memsim-fake"
        self.pci_bus_id = 0
        self.pci_device_id = 0
        self.pci_domain_id = 0

    def __repr__(self):
        return "_CudaDeviceProperties(name='%s', major=%d, minor=%d, " \
            "total_memory=%dMB, multi_processor_count=%d)" % (
                self.name, self.major, self.minor,
                self.total_memory >> 20, self.multi_processor_count)


# Streams: the default stream is 0, each torch.cuda.Stream() a new number
# (the trace's stream column); `with torch.cuda.stream(s)` and
# torch.cuda.set_stream() make S current, and blocks are allocated on the
# current stream, as CUDACachingAllocator::malloc does.  FSDP's all-gather
# and reduce-scatter streams and the process group's streams are told
# apart this way.
_CURRENT_STREAM = lifecycle.StreamSlot()  # per thread of the script's
_NEXT_STREAM = [1]


class _Stream:
    """torch.cuda.Stream, with its signature (stream_id= names an existing
    stream, as PyTorch's keyword arguments do)."""

    def __init__(self, device=None, priority=0, **kwargs):
        import torch
        # (cuda:0 whichever CUDA device was named: one rank sees one GPU)
        self.device = torch.device("cuda", 0)
        self.priority = priority
        _id = kwargs.get("stream_id")
        if _id is None:
            _id = _NEXT_STREAM[0]
            _NEXT_STREAM[0] += 1
        self.cuda_stream = _id
        self.stream_id = _id
        self.device_index = 0
        self.device_type = 1

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        if event is None:
            event = _Event()
        return event

    def synchronize(self):
        pass

    def query(self):
        return True

    def is_capturing(self):
        from . import graphs
        return graphs.capturing(self.stream_id)

    @staticmethod
    def priority_range():
        # (least, greatest): cudaDeviceGetStreamPriorityRange's on
        # Volta and later
        return (0, -5)

    @property
    def native_handle(self):
        return self.cuda_stream

    def __enter__(self):
        self._prev = _CURRENT_STREAM[0]
        _CURRENT_STREAM[0] = self.stream_id
        return self

    def __exit__(self, *a):
        _CURRENT_STREAM[0] = self._prev
        return False

    def __eq__(self, other):
        return isinstance(other, _Stream) and \
            other.stream_id == self.stream_id

    def __hash__(self):
        return self.stream_id


class _Event:
    """torch.cuda.Event, with its signature."""

    def __init__(self, enable_timing=False, blocking=False,
                 interprocess=False, external=False):
        self.enable_timing = enable_timing
        self.cuda_event = 0
        self.event_id = 0
        self.device = None

    @classmethod
    def from_ipc_handle(cls, device, handle):
        return cls()

    def ipc_handle(self):
        return b""

    def record(self, stream=None):
        pass

    def wait(self, stream=None):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, end_event):
        return 0.0


class _StreamContext:
    """torch.cuda.stream(s) / torch.cuda.StreamContext(s)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        self.prev = _CURRENT_STREAM[0]
        if self.stream is not None:
            _CURRENT_STREAM[0] = self.stream.stream_id
        return self

    def __exit__(self, type, value, traceback):
        _CURRENT_STREAM[0] = self.prev
        return False


def _generic(torch, base, fake):
    """torch.Stream or torch.Event (BASE) whose CUDA instances are FAKE
    (torch.cuda's, _Stream or _Event): a device of None is the current
    accelerator's, CUDA; a stream named by stream_id, device_index and
    device_type (1, CUDA) the CUDA stream of that number."""

    class _Meta(type(base)):
        def __call__(cls, device=None, **kwargs):
            if kwargs.get("device_type", 1) == 1 and (
                    device is None or torch.device(device).type == "cuda"):
                if fake is _Stream:
                    return _Stream(device, kwargs.get("priority", 0),
                                   **{k: v for k, v in kwargs.items()
                                      if k == "stream_id"})
                return _Event(**{k: v for k, v in kwargs.items()
                                 if k in ("enable_timing", "blocking",
                                          "interprocess")})
            return base(device, **kwargs)

        def __instancecheck__(cls, obj):
            return isinstance(obj, (base, fake))

        def __subclasscheck__(cls, sub):
            return issubclass(sub, (base, fake))

    generic = _Meta(base.__name__, (base,), {"__module__": "torch",
                                             "__doc__": base.__doc__})
    return generic


class _Device:
    """torch.cuda.device(device): every CUDA device is device 0 (one rank
    sees one GPU), so entering changes nothing."""

    def __init__(self, device):
        self.idx = 0
        self.prev_idx = 0

    def __enter__(self):
        return self

    def __exit__(self, type, value, traceback):
        return False


class _DeviceOf(_Device):
    """torch.cuda.device_of(obj)."""

    def __init__(self, obj):
        super().__init__(0)


def _like(orig, impl):
    """A replacement for the torch.cuda function ORIG with ORIG's
    signature: the call is bound as ORIG binds it (a TypeError where
    PyTorch's would raise one), then IMPL(arguments) answers, the
    arguments a dict by parameter name."""
    import inspect
    try:
        sig = inspect.signature(orig)
    except (TypeError, ValueError):
        sig = None

    def f(*a, **k):
        if sig is None:
            return impl(dict(enumerate(a), **k))
        b = sig.bind(*a, **k)
        b.apply_defaults()
        return impl(b.arguments)

    functools.update_wrapper(f, orig)
    return f


class _NvtxNoTool:
    """NVTX as a CUDA build runs it with no profiler attached (nsys,
    Nsight): every call returns at once; a push or pop answers
    NVTX_NO_PUSH_POP_TRACKING (-2), a range start the id 0."""
    rangePushA = staticmethod(lambda msg: -2)
    rangePop = staticmethod(lambda: -2)
    rangeStartA = staticmethod(lambda msg: 0)
    rangeEnd = staticmethod(lambda range_id: None)
    markA = staticmethod(lambda msg: None)
    deviceRangeStart = staticmethod(lambda msg, stream: None)
    deviceRangeEnd = staticmethod(lambda handle, stream: None)


class _CudartNoTool:
    """torch.cuda.cudart() for torch.cuda.profiler's start() and stop()
    (cudaProfilerStart/Stop: cudaSuccess with no profiler attached),
    and the cudaError that check_error() reads; no call reaches CUDA."""
    class cudaError:
        success = 0

    def cudaProfilerStart(self):
        return 0

    def cudaProfilerStop(self):
        return 0

    def __getattr__(self, name):
        raise AttributeError("memsim record: torch.cuda.cudart().%s is "
                             "not answered under --fake" % name)


def _patch_profiling(torch):
    """A profiling-instrumented script runs as on a GPU without a
    profiler: torch.cuda.nvtx's ranges and marks (a build without CUDA
    has only a stub that raises) and torch.cuda.profiler's start, stop
    and profile() (cudaProfilerStart through torch.cuda.cudart(), None
    without CUDA; a CUDA build's would initialize the driver)."""
    import torch.cuda.nvtx as nvtx
    import torch.cuda.profiler as prof
    if type(nvtx._nvtx).__name__ == "_NVTXStub":
        nvtx._nvtx = _NvtxNoTool()
    rt = _CudartNoTool()
    torch.cuda._cudart = rt
    prof.cudart = torch.cuda.cudart = _like(torch.cuda.cudart, lambda a: rt)
    # torch.profiler's CUDA activity (CUPTI on a GPU; a build without it
    # falls back to a CUDA event an op, each failing with a C++ stack:
    # "CUDA used in profiler but not enabled"), asked or by default
    # (supported_activities() where torch.cuda.is_available()): the host
    # side is profiled, as on a GPU; no GPU memory either way.
    try:
        from torch.profiler import profiler as tp
        from torch.autograd import profiler as ap
    except ImportError:
        return
    Act = tp.ProfilerActivity
    orig_kineto = tp._KinetoProfile.__init__

    def kineto_init(self, *a, activities=None, **k):
        acts = set(activities) if activities is not None else \
            set(tp.supported_activities())
        acts.discard(Act.CUDA)
        return orig_kineto(self, *a, activities=acts or {Act.CPU}, **k)

    tp._KinetoProfile.__init__ = kineto_init
    orig_legacy = ap.profile.__init__

    def legacy_init(self, *a, **k):
        if k.get("use_cuda"):
            k["use_cuda"] = False
        if k.get("use_device") == "cuda":
            k["use_device"] = None
        return orig_legacy(self, *a, **k)

    ap.profile.__init__ = legacy_init


# TorchScript's view of the recorder's replacements of F.* (_jit_builtins).
_JIT_SCHEMAS = {
    "sdpa": "sdpa(Tensor query, Tensor key, Tensor value, Tensor? "
            "attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, "
            "float? scale=None, bool enable_gqa=False) -> Tensor",
    "linear": "linear(Tensor input, Tensor weight, Tensor? bias=None) -> "
              "Tensor",
    "rms_norm": "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? "
                "weight=None, float? eps=None) -> Tensor",
}
_JIT_IMPL = {}


def _jit_builtins(torch, fns, backward):
    """torch.jit.script compiles the Python functions a module calls
    (nn.Linear's F.linear), except the builtins of an operator
    (torch.jit._builtins' table), and the replacements' source is not
    TorchScript.  Each is registered as the builtin of an operator
    memsim::NAME of PyTorch's signature, whose CompositeImplicitAutograd
    kernel is the replacement: a scripted module calls it as eager code
    does.  torch.autograd.backward's replacement (it counts phases)
    stands for aten::backward, as PyTorch's does."""
    from torch.jit import _builtins as jb
    if not _JIT_IMPL:
        lib = torch.library.Library("memsim", "DEF")
        for name, schema in _JIT_SCHEMAS.items():
            lib.define(schema)
            lib.impl(name, (lambda n: lambda *a, **k:
                            _JIT_IMPL[n](*a, **k))(name),
                     "CompositeImplicitAutograd")
        _JIT_IMPL["lib"] = lib
    for name, fn in fns.items():
        _JIT_IMPL[name] = fn
        jb._register_builtin(fn, "memsim::" + name)
    jb._register_builtin(backward, "aten::backward")


def _cuda_stats(rec):
    """torch.cuda.memory_stats_as_nested_dict(): every key PyTorch's
    CUDACachingAllocator reports (DeviceStats), from the caching allocator
    modelled beside the recording (Recorder.allocator()); without it,
    bytes from the recording (allocated in blocks of round_size,
    requested as asked; reserved as allocated), counts zero."""
    pools = ("all", "large_pool", "small_pool")
    lv = rec.allocator()
    if lv is None:
        def stat(cur=0, peak=0):
            return {"current": cur, "peak": peak, "allocated": peak,
                    "freed": peak - cur}
    else:
        def stat(key=None):
            return {f: lv.get("%s.%s" % (key, f)) for f in (
                "current", "peak", "allocated", "freed")}
    out = {}
    for k in ("allocation", "segment", "active", "inactive_split",
              "inactive_split_bytes", "allocated_bytes", "reserved_bytes",
              "active_bytes", "requested_bytes"):
        out[k] = {p: stat("%s.%s" % (k, p)) if lv else stat()
                  for p in pools}
    if lv is None:
        for k in ("allocated_bytes", "reserved_bytes", "active_bytes",
                  "requested_bytes"):
            out[k]["all"] = (stat(rec.allocated, rec.peak)
                             if k == "requested_bytes" else
                             stat(rec.blocks, rec.blocks_peak))
        if rec.rows:
            values.assume(rec, "allocator-model:absent", "live blocks")
    for k in ("num_alloc_retries", "num_ooms", "num_sync_all_streams",
              "num_device_alloc", "num_device_free", "num_oom_rejections"):
        out[k] = lv.get(k) if lv else 0
    out["max_split_size"] = lv.get("max_split_size") if lv else -1
    out["oversize_allocations"] = stat("oversize_allocations") if lv \
        else stat()
    out["oversize_segments"] = stat("oversize_segments") if lv else stat()
    out["reserved_bytes_by_private_pools"] = {}
    return out


def _patch_native(torch):
    """Let fake CUDA tensors through autograd where PyTorch has no CUDA or
    no GPU.  The autograd engine asks the device guard of a tensor's device
    for its stream (InputMetadata), starts a worker thread per device the
    guards report (Engine::start_device_threads) and needs CUDA to be the
    accelerator (at::getAccelerator, Node::stream).  A Python device guard
    reporting type CUDA takes the CUDA slot of
    c10::impl::device_guard_impl_registry, and the CUDA hooks answer
    hasCUDA / isBuilt / isAvailable true, one device, no primary context.
    Nothing here runs a kernel: every op stops at the fake tensor mode."""
    import ctypes
    libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
    c10 = ctypes.CDLL(os.path.join(libdir, "libc10.so"))
    tcpu = ctypes.CDLL(os.path.join(libdir, "libtorch_cpu.so"))

    class _Guard(torch._C._acc.DeviceGuard):
        def type_(self):
            return torch._C._autograd.DeviceType.CUDA

    reg = ctypes.c_void_p.in_dll(c10,
                                 "_ZN3c104impl26device_guard_impl_registryE")
    slots = (ctypes.c_void_p * 21).from_address(ctypes.addressof(reg))
    saved20 = slots[20]
    torch._C._acc.register_python_privateuseone_device_guard(_Guard())
    slots[1] = slots[20]
    slots[20] = saved20
    try:
        guard_vtable = _unwinding_safe_guard(torch, slots[1], slots[0])
    except (OSError, ValueError, RuntimeError):
        # (a PyTorch whose header differs: recordings as before, an
        # error inside backward may end the recorder by a signal)
        guard_vtable = None
    get = tcpu._ZN2at6detail12getCUDAHooksEv
    get.restype = ctypes.c_void_p
    obj = get()
    vptr = ctypes.c_void_p.from_address(obj).value
    n = 128
    table = (ctypes.c_void_p * n)(*(ctypes.c_void_p * n).from_address(vptr))
    keep = []

    def put(slot, restype, argtypes, fn):
        cf = ctypes.CFUNCTYPE(restype, *argtypes)(fn)
        keep.append(cf)
        table[slot] = ctypes.cast(cf, ctypes.c_void_p).value

    # The slots of at::CUDAHooksInterface's virtual functions, in the
    # Itanium ABI's order, read from the headers shipped with this PyTorch
    # (ATen/detail/AcceleratorHooksInterface.h, CUDAHooksInterface.h).
    slot = _hook_slots(torch)
    v = ctypes.c_void_p
    put(slot["isBuilt"], ctypes.c_bool, (v,), lambda s: True)
    put(slot["isAvailable"], ctypes.c_bool, (v,), lambda s: True)
    put(slot["hasPrimaryContext"], ctypes.c_bool, (v, ctypes.c_int8),
        lambda s, d: False)
    put(slot["deviceCount"], ctypes.c_int8, (v,), lambda s: 1)
    # torch.__config__.show() (PyTorch Geometric asks it at import) adds
    # the hooks' showConfig() where hasCUDA(): a CPU build's hooks have
    # none to give and throw, so while it runs there, no CUDA.
    config = [False]
    put(slot["hasCUDA"], ctypes.c_bool, (v,), lambda s: not config[0])
    if not hasattr(torch._C, "_cuda_getDeviceCount"):   # a CPU build
        orig_show = torch._C._show_config

        def show_config():
            config[0] = True
            try:
                return orig_show()
            finally:
                config[0] = False
        torch._C._show_config = show_config
    ctypes.c_void_p.from_address(obj).value = ctypes.addressof(table)
    return (table, keep, guard_vtable)


def _quiet_meta_failures():
    """FakeTensorMode logs an error with its own traceback for every op
    whose meta kernel raises (_dispatch_impl), then raises it: on the GPU
    the kernel raises the same error with no log.  The error still
    reaches the script, and the recorder prints the script's traceback;
    the log's copy, in PyTorch's frames, is left out."""
    import logging

    def keep(record):
        return not str(record.msg).startswith(
            "failed while attempting to run meta")
    logging.getLogger("torch._subclasses.fake_tensor").addFilter(keep)


def _unwinding_safe_guard(torch, guard, cpu_guard):
    """The Python device guard's C++ methods ask the Python object its
    type (PythonDeviceGuard::getDevice calls type(), which calls type_).
    A Python error raised in the autograd engine's worker thread (a fake
    kernel's, a tensor hook's) stays set in the thread while C++ unwinds
    to Engine::thread_main, which persists it (python_error::persist);
    on the way the stream guard of Engine::evaluate_function is destroyed
    (~InlineStreamGuard calls exchangeStream, noexcept), a Python call
    with an error set fails, and the process ends in std::terminate.  The
    guard object gets a copy of its virtual table where exchangeStream is
    the CPU guard's, which calls no Python: no stream is ever switched on
    a fake device, and the stream it returns is only given back to it."""
    import ctypes
    names = _virtuals(torch, os.path.join("c10", "core", "impl",
                                          "DeviceGuardImplInterface.h"),
                      "struct C10_API DeviceGuardImplInterface")
    if "exchangeStream" not in names or not guard or not cpu_guard:
        raise RuntimeError("no device guard's exchangeStream")
    k = names.index("exchangeStream")
    vptr = ctypes.c_void_p.from_address(guard).value
    cpu = ctypes.c_void_p.from_address(cpu_guard).value
    # the offset to top and the type's RTTI come before the functions
    n = 2 + len(names)
    table = (ctypes.c_void_p * n)(*(ctypes.c_void_p * n).from_address(
        vptr - 2 * ctypes.sizeof(ctypes.c_void_p)))
    table[2 + k] = ctypes.c_void_p.from_address(
        cpu + k * ctypes.sizeof(ctypes.c_void_p)).value
    ctypes.c_void_p.from_address(guard).value = (
        ctypes.addressof(table) + 2 * ctypes.sizeof(ctypes.c_void_p))
    return table


def _virtuals(torch, header, cls):
    """The virtual functions of class CLS declared in HEADER (under the
    installed PyTorch's include/), in the Itanium ABI's virtual table
    order: declaration order, a destructor twice (complete and
    deleting)."""
    import re
    text = open(os.path.join(os.path.dirname(torch.__file__), "include",
                             header)).read()
    text = text[text.index(cls):]
    text = text[:text.index("\n};")]
    text = re.sub(r"//[^\n]*", "", text)
    names = []
    for m in re.finditer(r"\bvirtual\b[^(;{]*?([~A-Za-z_][A-Za-z_0-9]*)"
                         r"\s*\(", text):
        n = m.group(1)
        if n.startswith("~"):
            names += [n, n]
        elif n not in names:
            names.append(n)
    return names


def _hook_slots(torch):
    detail = os.path.join("ATen", "detail")
    names = (_virtuals(torch, os.path.join(detail,
                                           "AcceleratorHooksInterface.h"),
                       "struct TORCH_API AcceleratorHooksInterface")
             + _virtuals(torch, os.path.join(detail, "CUDAHooksInterface.h"),
                         "struct TORCH_API CUDAHooksInterface"))
    names = [n for i, n in enumerate(names)
             if n.startswith("~") or n not in names[:i]]
    want = ("isBuilt", "isAvailable", "hasPrimaryContext", "deviceCount",
            "hasCUDA")
    missing = [w for w in want if w not in names]
    if missing:
        raise RuntimeError("CUDA hooks without %s" % ", ".join(missing))
    return {w: names.index(w) for w in want}


try:
    from torch.nested._internal.nested_tensor import \
        NestedTensor as _NestedTensor
except ImportError:     # a PyTorch without jagged nested tensors
    _NestedTensor = None


def _patch_nested_int(torch, ftm):
    """A jagged nested tensor's ragged size is a nested int of its offsets
    (get_tensor_symint): FakeTensor.get_nested_int asks its mode for a
    symbolic one, which needs a ShapeEnv the recorder's mode has not.  A
    fake without one gets what a real tensor gets in eager mode, a
    NestedIntNode numbered once per tensor, so torch.nested.nested_tensor
    (layout=torch.jagged) and the ops of its subclass run as in eager
    mode, on the fake values."""
    from torch.nested._internal import nested_tensor as nt
    orig = ftm.FakeTensor.get_nested_int

    def get_nested_int(self, *, coeff=1):
        if self.fake_mode.shape_env is not None:
            return orig(self, coeff=coeff)
        if self.nested_int_memo is None:
            self.nested_int_memo = torch.SymInt(
                nt.NestedIntNode(nt._tensor_id_counter, 1))
            nt._tensor_id_counter += 1
        return self.nested_int_memo * coeff
    ftm.FakeTensor.get_nested_int = get_nested_int
    _patch_jagged_compile(nt.NestedTensor, ftm.FakeTensor)


def _patch_jagged_compile(njt, fake):
    """A jagged nested tensor through torch.compile.  Its cached minimum
    and maximum lengths are CPU tensors of shape (n, 0) (torch.nested's
    _store_val_in_tensor), real under the recorder beside its fake
    values and offsets, where a run has them all real: Dynamo's
    is_fake() refuses a subclass of fake and real inner tensors ("got
    mixed fake and real tensors!").  __tensor_flatten__, which Dynamo
    and is_fake read them by, makes them fakes of the values' mode first
    (no storage: they carry their number in their shape).  And
    AOTAutograd's wrapper rebuilds a compiled graph's nested outputs with
    -1 for the ragged size (subclass_codegen._concrete_value), which
    __tensor_unflatten__ takes as the ragged size of fake offsets, as
    when it traces; of real offsets, as in a run, it is the offsets' own
    nested int (get_tensor_symint): so for offsets of the recorder's mode
    (no ShapeEnv) too."""
    flatten = njt.__tensor_flatten__
    unflatten = njt.__tensor_unflatten__

    def ours(t):
        return isinstance(t, fake) and t.fake_mode.shape_env is None

    def __tensor_flatten__(self):
        v = self._values
        if ours(v):
            cache = self._metadata_cache
            for k in ("min_seqlen", "max_seqlen"):
                m = cache.get(k)
                if m is not None and not isinstance(m, fake):
                    cache[k] = v.fake_mode.from_tensor(m)
        return flatten(self)

    def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
        src = inner.get("_lengths")
        if src is None:
            src = inner["_offsets"]
        r = meta["ragged_idx"]
        if ours(src) and isinstance(outer_size[r], int) and outer_size[r] < 0:
            outer_size = list(outer_size)
            outer_size[r] = src.get_nested_int(coeff=1)
        return unflatten(inner, meta, outer_size, outer_stride)
    njt.__tensor_flatten__ = __tensor_flatten__
    njt.__tensor_unflatten__ = staticmethod(__tensor_unflatten__)


def _patch_cuda(torch, rec, dev):
    name, major, minor, total, sms = devices.DEVICES[dev]
    props = _Props(name, major, minor, total, sms, devices.L2_BYTES.get(dev))
    c = torch.cuda
    import torch.cuda.memory as cmem
    import torch.cuda.random as crand
    import torch.cuda.streams as cstreams
    mods = [c, cmem, crand, cstreams]

    def setc(nm, impl, cls=None):
        """torch.cuda.NM answered by IMPL(arguments) with PyTorch's
        signature (_like), or replaced by the class CLS; the same name in
        torch.cuda's submodules that hold the same object too (the
        original memory_stats calls memory.memory_stats_as_nested_dict)."""
        orig = getattr(c, nm, None)
        new = cls if cls is not None else \
            _like(orig if orig is not None else impl, impl)
        for m in mods:
            if nm in m.__dict__ and (m is c or m.__dict__[nm] is orig):
                setattr(m, nm, new)
        if nm not in c.__dict__:
            setattr(c, nm, new)

    setc("is_available", lambda a: True)
    setc("is_initialized", lambda a: True)
    c._lazy_init = lambda: None
    setc("init", lambda a: None)
    setc("device_count", lambda a: max(1, rec.opt.world_size))
    setc("current_device", lambda a: 0)
    setc("set_device", lambda a: None)
    setc("get_device_properties", lambda a: props)
    setc("get_device_capability", lambda a: (major, minor))
    setc("get_device_name", lambda a: name)
    setc("get_arch_list", lambda a: ["sm_%d%d" % (major, minor)])
    setc("is_bf16_supported", lambda a: major >= 8)
    setc("synchronize", lambda a: None)
    setc("Stream", None, _Stream)
    setc("Event", None, _Event)
    setc("current_stream", lambda a: _Stream(stream_id=_CURRENT_STREAM[0]))
    setc("default_stream", lambda a: _Stream(stream_id=0))

    def set_stream(a):
        if a["stream"] is not None:
            _CURRENT_STREAM[0] = a["stream"].stream_id

    setc("stream", lambda a: _StreamContext(a["stream"]))
    setc("StreamContext", None, _StreamContext)
    setc("set_stream", set_stream)
    from . import graphs
    setc("is_current_stream_capturing", lambda a: graphs.capturing())
    import torch.cuda.graphs as cg
    cg.is_current_stream_capturing = lambda: graphs.capturing()
    # torch.cuda.empty_cache and torch.cuda.memory.empty_cache (the same
    # function; a program may call either): a row of the trace.
    setc("empty_cache", lambda a: rec.empty_cache())
    # torch.clear_autocast_cache (autocast's __exit__ at the outermost
    # level calls it): the cast copies it drops freed in the order they
    # were made (Recorder.in_alloc_order), not in the hash map's.
    orig_clear = torch._C.clear_autocast_cache

    def clear_autocast_cache():
        return rec.in_alloc_order(orig_clear)
    torch.clear_autocast_cache = clear_autocast_cache
    torch._C.clear_autocast_cache = clear_autocast_cache
    # torch._C._cuda_clearCublasWorkspaces (Lightning's teardown calls
    # it before empty_cache): the workspaces' blocks freed.
    torch._C._cuda_clearCublasWorkspaces = rec.clear_blas_workspaces
    # FakeTensor.__new__ would make a real CUDA tensor once "so that
    # backward works" (init_gpu_context): no GPU is touched here.
    import torch._subclasses.fake_tensor as ftm
    ftm.init_gpu_context = lambda device: None
    _patch_nested_int(torch, ftm)
    # The fake convolution asks which kernel would run to pick the output's
    # memory format (torch._C._select_conv_backend), which queries cuDNN
    # and the GPU.  On CUDA that is cuDNN, and its memory format is
    # cudnn_conv_suggest_memory_format()'s: channels_last when the input
    # or the weight is, else contiguous.
    orig_select = torch._C._select_conv_backend
    orig_fmt = torch._C._conv_determine_backend_memory_format

    def select(*a, **k):
        inp = a[0] if a else k.get("input")
        if inp.device.type == "cuda":
            return torch._C._ConvBackend.Cudnn
        return orig_select(*a, **k)

    def fmt(*a, **k):
        inp = a[0] if a else k.get("input")
        weight = a[1] if len(a) > 1 else k.get("weight")
        if inp.device.type == "cuda":
            cl = torch.channels_last if inp.dim() == 4 else \
                torch.channels_last_3d
            if inp.dim() in (4, 5) and (
                    (inp.is_contiguous(memory_format=cl) and
                     not inp.is_contiguous()) or
                    (weight.is_contiguous(memory_format=cl) and
                     not weight.is_contiguous())):
                return cl
            return torch.contiguous_format
        return orig_fmt(*a, **k)

    # Ops with a CUDA kernel and a CompositeImplicitAutograd one
    # (silu_backward, mish_backward): a PyTorch without CUDA kernels takes
    # the decomposition (six tensors for silu_backward instead of one).  A
    # CUDA kernel registered here makes the dispatcher keep the op whole;
    # the fake mode answers it before any kernel runs.
    if not torch._C._dispatch_has_kernel_for_dispatch_key(
            "aten::silu_backward", "CUDA"):
        lib = torch.library.Library("aten", "IMPL")
        rec._cuda_lib = lib

        def never(*a, **k):
            raise RuntimeError("memsim record: a CUDA kernel was run")

        for op in torch._C._dispatch_get_all_op_names():
            if not op.startswith("aten::"):
                continue
            has = torch._C._dispatch_has_kernel_for_dispatch_key
            if has(op, "CompositeImplicitAutograd") and \
                    (has(op, "CPU") or has(op, "Meta")):
                lib.impl(op[6:], never, "CUDA")
    torch._C._select_conv_backend = select
    torch._C._conv_determine_backend_memory_format = fmt
    # cudaMemGetInfo: the device less its context and what the caching
    # allocator reserved
    setc("mem_get_info", lambda a: (
        total - devices.CONTEXT_BYTES[dev] - rec.reserved(), total))
    setc("memory_allocated", lambda a: rec.blocks)
    setc("max_memory_allocated", lambda a: rec.blocks_peak)
    setc("memory_reserved", lambda a: rec.reserved())
    setc("max_memory_reserved", lambda a: rec.reserved(peak=True))

    def reset_peak(a):
        rec.peak = rec.allocated
        rec.blocks_peak = rec.blocks
        if rec.model:
            rec.live_request("reset_peaks")
    setc("reset_peak_memory_stats", reset_peak)
    setc("reset_max_memory_allocated", reset_peak)
    setc("reset_accumulated_memory_stats", lambda a: None)
    # memory_stats() and memory_summary() stay PyTorch's: they read
    # memory_stats_as_nested_dict(), answered with the full key set.
    setc("memory_stats_as_nested_dict", lambda a: _cuda_stats(rec))
    # torch.accelerator, the device-generic API (pytorch/examples,
    # torch.utils.benchmark's timer): on CUDA its memory functions read
    # the CUDA caching allocator's statistics (c10's
    # CachingDeviceAllocator), which torch.cuda's answer above; its
    # synchronize waits for no kernel (the native one raises once the
    # device counts as initialized, after a torch.compile).
    acc = getattr(torch, "accelerator", None)
    if acc is not None:
        def via(name, orig):
            @functools.wraps(orig)      # (PyTorch's signature)
            def f(*a, **k):
                return getattr(c, name)()
            return f
        for an, cn in (("memory_allocated", "memory_allocated"),
                       ("max_memory_allocated", "max_memory_allocated"),
                       ("memory_reserved", "memory_reserved"),
                       ("max_memory_reserved", "max_memory_reserved"),
                       ("memory_stats", "memory_stats"),
                       ("reset_peak_memory_stats",
                        "reset_peak_memory_stats"),
                       ("reset_accumulated_memory_stats",
                        "reset_accumulated_memory_stats"),
                       ("empty_cache", "empty_cache"),
                       ("get_memory_info", "mem_get_info"),
                       ("synchronize", "synchronize")):
            for m in (acc, getattr(acc, "memory", None)):
                if m is not None and hasattr(m, an):
                    setattr(m, an, via(cn, getattr(m, an)))
    # torch.cuda.manual_seed(s) and manual_seed_all(s) (which
    # torch.manual_seed calls) reseed the CUDA generator
    # (CUDAGeneratorImpl::set_current_seed, the philox offset back to 0):
    # under --values cpu, the recorder's generator of the GPU's draws
    # (Values.seed_cuda), so that a program seeding again draws the same
    # numbers again.
    def seed_cuda(a):
        kn = getattr(rec, "known", None)
        vs = kn.values if kn is not None else None
        if vs is not None:
            vs.seed_cuda(a["seed"])
    setc("manual_seed", seed_cuda)
    setc("manual_seed_all", seed_cuda)
    setc("seed", lambda a: None)
    setc("seed_all", lambda a: None)
    # The CUDA generator's state (philox: seed and offset, 16 bytes).
    setc("get_rng_state", lambda a: torch.zeros(16, dtype=torch.uint8,
                                                device="cpu"))
    setc("set_rng_state", lambda a: None)
    setc("ipc_collect", lambda a: None)
    # torch.Generator(device="cuda") (a seeded sampler, diffusers'
    # pipelines) needs the CUDA library: a CPU generator that says
    # cuda:0 instead (the fake ops take no values from it); isinstance
    # holds for every generator, torch.default_generator's included.
    base = torch._C.Generator

    class _GenMeta(type(base)):
        def __instancecheck__(cls, obj):
            return isinstance(obj, base)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, base)

    class Generator(base, metaclass=_GenMeta):
        def __new__(cls, device=None):
            d = torch.device(device if device is not None else "cpu")
            g = base.__new__(cls, "cpu" if d.type == "cuda" else d)
            g._memsim_cuda = d.type == "cuda"
            return g

        @property
        def device(self):
            if getattr(self, "_memsim_cuda", False):
                return torch.device("cuda", 0)
            return base.device.__get__(self)

        # A CUDA generator's clone_state() and graphsafe_get_state() are
        # CUDA generators of its device (CUDAGeneratorImpl::clone_state,
        # graphsafe_get_state): AOTAutograd's graph-safe RNG
        # functionalization (partitioners.apply_graphsafe_rng_
        # functionalization, a checkpointed seeded op recomputed in the
        # backward) clones the device's default generator and reads the
        # clone's device index (graph_compile.py: graphsafe_rng_state_
        # index).  The base class's clone is a plain CPU generator.
        def clone_state(self):
            if not getattr(self, "_memsim_cuda", False):
                return base.clone_state(self)
            g = Generator("cuda")
            g.set_state(self.get_state())
            return g

        def graphsafe_get_state(self):
            if not getattr(self, "_memsim_cuda", False):
                return base.graphsafe_get_state(self)
            return self

        def graphsafe_set_state(self, state):
            if not getattr(self, "_memsim_cuda", False):
                return base.graphsafe_set_state(self, state)
            self.set_state(state.get_state())

    Generator.__module__ = "torch"
    Generator.__doc__ = base.__doc__
    torch.Generator = Generator
    # torch.Stream() and torch.Event(), the device-generic ones, on the
    # current accelerator (CUDA here, torch.accelerator says so): the
    # native constructors make a stream the CUDA device guard numbers 0
    # and `with stream:` changes no current stream, so a program's side
    # stream (transformers' OffloadedCache prefetches the next layer on
    # one) allocated from the default stream's pool, where the GPU's
    # caching allocator gives each stream its own blocks.  A CUDA one is
    # torch.cuda's (_Stream, _Event); isinstance holds for both kinds.
    # torch.accelerator's current stream is torch.cuda's (DDP's
    # _to_kwargs waits on its side stream from it), but in a frame Dynamo
    # traces, the native one it knows.
    for cls_name, fake_cls in (("Stream", _Stream), ("Event", _Event)):
        torch_cls = getattr(torch, cls_name, None)
        if torch_cls is not None:
            setattr(torch, cls_name, _generic(torch, torch_cls, fake_cls))
    if acc is not None and hasattr(acc, "current_stream"):
        acc_stream = acc.current_stream
        acc_set = getattr(acc, "set_stream", None)

        def current_stream(device=None, /):
            if torch.compiler.is_compiling():
                return acc_stream(device)
            return _Stream(stream_id=_CURRENT_STREAM[0])

        def set_stream(stream):
            if isinstance(stream, _Stream):
                _CURRENT_STREAM[0] = stream.stream_id
            else:
                acc_set(stream)
        for fn, orig in ((current_stream, acc_stream),
                         (set_stream, acc_set)):
            if orig is not None:
                setattr(acc, fn.__name__,
                        functools.update_wrapper(fn, orig))
    c.default_generators = (Generator("cuda"),)
    setc("device", None, _Device)
    setc("device_of", None, _DeviceOf)
    setc("initial_seed", lambda a: torch.initial_seed())
    setc("set_per_process_memory_fraction",
         lambda a: setattr(rec, "mem_fraction", float(a["fraction"])))
    setc("get_per_process_memory_fraction",
         lambda a: 1.0 if rec.mem_fraction is None else rec.mem_fraction)
    setc("get_sync_debug_mode", lambda a: 0)
    setc("set_sync_debug_mode", lambda a: None)
    setc("get_allocator_backend", lambda a: "native")
    setc("memory_snapshot", lambda a: [])
    # PyTorch's memory-debugging workflow (the memory_viz tutorial:
    # _record_memory_history, _dump_snapshot of _snapshot(), an out-of-
    # memory observer) runs as on a GPU: recording the history changes
    # nothing here (the trace is the history; `memsim run --snapshot-out`
    # replays it to PyTorch's snapshot), a snapshot taken during the
    # recording holds no segment, metadata is kept.
    cmem._record_memory_history = _like(cmem._record_memory_history,
                                        lambda a: None)
    cmem._record_memory_history_legacy = _like(
        cmem._record_memory_history_legacy, lambda a: None)
    cmem._snapshot = _like(cmem._snapshot, lambda a: {
        "segments": [], "device_traces": [[]]})
    metadata = [""]
    cmem._set_memory_metadata = _like(
        cmem._set_memory_metadata,
        lambda a: metadata.__setitem__(0, a["metadata"]))
    cmem._get_memory_metadata = _like(cmem._get_memory_metadata,
                                      lambda a: metadata[0])
    # The allocator's settings a script sets (Recorder.settings): kept for
    # the trace, and given to the CPU build's own parser as on the GPU.
    # torch.cuda.memory._set_allocator_settings stays PyTorch's (its
    # deprecation warning names the script's line): it calls
    # torch._C._accelerator_setAllocatorSettings, before 2.9
    # _cuda_cudaCachingAllocator_set_allocator_settings, replaced here.
    def set_settings(orig):
        @functools.wraps(orig)
        def f(env, *args, **kwargs):
            out = orig(env, *args, **kwargs)
            rec.settings(env if isinstance(env, str) else "")
            return out
        return f
    for nm in ("_accelerator_setAllocatorSettings",
               "_cuda_cudaCachingAllocator_set_allocator_settings"):
        if getattr(torch._C, nm, None) is not None:
            setattr(torch._C, nm, set_settings(getattr(torch._C, nm)))
    if not hasattr(torch._C, "_cuda_attach_out_of_memory_observer"):
        torch._C._cuda_attach_out_of_memory_observer = \
            lambda observer: None
    setc("current_blas_handle", lambda a: 0)
    setc("current_solver_handle", lambda a: 0)
    setc("caching_allocator_enable", lambda a: None)
    # caching_allocator_alloc / _delete (raw_alloc and raw_delete: memory
    # from PyTorch's pool for another library's kernels, CuPy's
    # PyTorch allocator): a block of SIZE on the current stream, its
    # address the trace's, freed by delete.
    raw = {}

    def raw_alloc(a):
        size = int(a["size"])
        if size < 0:
            raise RuntimeError("caching_allocator_alloc: negative size %d"
                               % size)
        key = ("raw", len(raw), object())
        addr = rec.alloc(size, rec.category("raw_alloc"), rec.site(), key)
        if addr:
            raw[addr] = key
        return addr

    def raw_delete(a):
        key = raw.pop(int(a["mem_ptr"]), None)
        if key is not None:
            rec.free(key)

    setc("caching_allocator_alloc", raw_alloc)
    setc("caching_allocator_delete", raw_delete)
    # The NVML readings (torch.cuda.utilization, memory_usage,
    # temperature, power_draw, clock_rate: pynvml on a GPU, which is the
    # driver's): an idle device's, 0 but the clock, the device's boost
    # clock is not known here and reads 0 too.
    for nm in ("utilization", "memory_usage", "temperature", "power_draw",
               "clock_rate"):
        if hasattr(c, nm):
            setc(nm, lambda a: 0)
    setc("host_memory_stats_as_nested_dict", lambda a: {})
    # nn.DataParallel on the one GPU a rank sees: scatter and gather as
    # torch._C._scatter / _gather (a CUDA build's) do for one device,
    # chunks that are views of the input, the parts concatenated.
    import torch.nn.parallel.comm as comm

    def scatter(a):
        t, sizes, dim = a["tensor"], a["chunk_sizes"], a["dim"]
        n = len(a["devices"] or [0])
        parts = t.split(list(sizes), dim) if sizes else t.chunk(n, dim)
        return tuple(p.cuda() for p in parts)

    def gather(a):
        return torch.cat([t.cuda() for t in a["tensors"]], a["dim"])

    comm.scatter = _like(comm.scatter, scatter)
    comm.gather = _like(comm.gather, gather)
    # A CUDA build's answers (import-time queries of libraries).  Where
    # PyTorch is a CUDA build its own answers stand: torchvision's
    # _check_cuda_version() compares torch.version.cuda with the CUDA it
    # was built with and refuses to import on a mismatch.
    if torch.version.cuda is None:
        torch.version.cuda = getattr(devices, "CUDA_VERSION", "12.8")
    try:
        import torch.backends.cudnn as cudnn
        if cudnn.version() is None:
            cudnn.version = lambda: devices.CUDNN_VERSION
        cudnn.is_available = lambda: True
    except Exception:
        pass
    try:
        import torch.backends.cuda as bc
        bc.is_built = lambda: True
    except Exception:
        pass
    # TorchScript's fuser compiles a fusion group's CUDA kernel (NVRTC
    # through libcuda) at a scripted function's first optimized run,
    # where PyTorch is a CUDA build: never asked (effdet's scripted
    # _batch_detection stopped at its third call with "Error in dlopen:
    # libcuda.so.1").  Its groups run op by op at every call, as at the
    # profiling executor's first calls in a real run; a fused call's
    # peak is lower by the group's intermediates (docs/
    # recording-boundary.md).  A script's own switch
    # (torch.jit.fuser("fuser1"), Megatron's set_jit_fusion_options)
    # leaves it off.
    torch._C._jit_override_can_fuse_on_gpu(False)
    torch._C._jit_override_can_fuse_on_gpu = lambda flag: None
    _patch_profiling(torch)
    torch.Tensor.pin_memory = lambda self, *a, **k: self
    torch.Tensor.record_stream = lambda self, s: None
    orig_to = torch.Tensor.to

    from torch.nn.parameter import UninitializedTensorMixin as _Lazy

    def to(self, *args, **kwargs):
        try:
            device, dtype, non_blocking, fmt = torch._C._nn._parse_to(
                *args, **kwargs)
        except Exception:
            return orig_to(self, *args, **kwargs)
        if device is not None and device.type == "cuda":
            if isinstance(self, _Lazy):
                return _lazy_cuda(self, dtype)
            # Every CUDA device is device 0: one rank sees one GPU.
            if self.device.type != "cuda":
                # (non_blocking with another dtype converts on the GPU:
                # dispatch.py's copy_kernel_cuda rule)
                kw = {"non_blocking": True} if non_blocking else {}
                return torch.ops.aten._to_copy.default(
                    self, dtype=dtype or self.dtype,
                    device=torch.device("cuda", 0), **kw)
            if dtype is None or dtype == self.dtype:
                return self
            return orig_to(self, dtype)
        return orig_to(self, *args, **kwargs)

    def _lazy_cuda(self, dtype=None):
        """A lazy module's parameter or buffer not yet materialized
        (LazyLinear's UninitializedParameter, a real host tensor of no
        elements) moved to the GPU: PyTorch moves its empty data there and
        materialize() then makes it on that device.  Here it stays as it
        is, marked; its module's first forward (_infer_parameters) puts a
        fake CUDA one in its place when initialize_parameters()
        materializes it."""
        if dtype is not None:
            self._memsim_dtype = dtype
        self._memsim_cuda = True
        return self

    orig_materialize = _Lazy.materialize

    def materialize(self, shape, device=None, dtype=None):
        owner = getattr(self, "_memsim_owner", None)
        if owner is None or device is not None:
            return orig_materialize(self, shape, device=device, dtype=dtype)
        module, table, name = owner
        t = torch.empty(shape, device=torch.device("cuda", 0),
                        dtype=dtype or getattr(self, "_memsim_dtype",
                                               self.dtype))
        if isinstance(self, torch.nn.Parameter):
            t = torch.nn.Parameter(t, requires_grad=self.requires_grad)
            rec.relabel(t, "parameter",
                        clean(type(module).__name__ + "." + name))
        getattr(module, table)[name] = t
        del self._memsim_owner

    _Lazy.materialize = materialize
    from torch.nn.modules import lazy as _lazym
    orig_infer = _lazym.LazyModuleMixin._infer_parameters

    def _infer_parameters(self, module, args, kwargs=None):
        for table in ("_parameters", "_buffers"):
            for name, t in getattr(module, table).items():
                if getattr(t, "_memsim_cuda", False):
                    t._memsim_owner = (module, table, name)
        return orig_infer(self, module, args, kwargs)

    _lazym.LazyModuleMixin._infer_parameters = _infer_parameters

    def cuda(self, device=None, non_blocking=False, **kw):
        if isinstance(self, _Lazy):
            return _lazy_cuda(self)
        if self.device.type == "cuda":
            return self
        return torch.ops.aten._to_copy.default(
            self, device=torch.device("cuda", 0))

    torch.Tensor.to = to
    torch.Tensor.cuda = cuda
    _patch_legacy_types(torch)
    _patch_tensor_data(torch)
    # `param.data = param.to(device)` (FSDP's _move_states_to_device, and
    # older code moving modules by hand) swaps a fake tensor's data; a fake
    # tensor's device is an attribute of its own (fake_device), which
    # set_data leaves as it was: it follows the new data here.  So do the
    # values known of the new data (a shadow, a uniform value: keyed by
    # tensor, they stayed with VALUE): SELF now has its storage, sizes and
    # strides.  PEFT casts the adapters of a bf16 model back to float32
    # so (cast_adapter_dtype: param.data = param.data.to(torch.float32)),
    # and --values cpu had lost every adapter weight's values.
    from torch._subclasses.fake_tensor import FakeTensor as _FT
    data = torch._C.TensorBase.data

    def _set_data(self, value):
        kn = getattr(rec, "known", None)
        v = r = up = None
        if kn is not None and isinstance(value, _FT) and value is not self:
            v = kn.value(value)
            if kn.values is not None:
                r = kn.values.real(value)
                up = kn.values._upload_of(value) \
                    if kn.values.uploads else None
        data.__set__(self, value)
        if isinstance(value, _FT):
            self.fake_device = value.fake_device
        elif isinstance(value, torch.Tensor):
            # a real host tensor (Koopa: `self.K.weight.data =
            # torch.mm(U, V.t())` of a CPU SVD, the model then moved):
            # its values go on with the fake parameter (its shadow,
            # under the rules a small one), as the real one holds them
            vs = kn.values if kn is not None else None
            if vs is not None and (vs.cpu or vs._small(value)):
                vs._set(self, value.detach())
        if v is not None and v is not known.UNKNOWN:
            kn._set(self, v)
        if r is not None:
            kn.values._set(self, r)
        elif up is not None:
            # a copy from the host (values.Values._upload), the same
            kn.values._keep(kn.values.uploads, self, up)

    _FT.data = property(data.__get__, _set_data)
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    # Optimizers pick foreach (or fused) kernels for CUDA tensors of the
    # plain types (_default_to_fused_or_foreach); fake ones are CUDA too.
    from torch._subclasses.fake_tensor import FakeTensor
    import torch.optim.optimizer as oo
    if FakeTensor not in oo._foreach_supported_types:
        oo._foreach_supported_types.append(FakeTensor)
    # So do clip_grad_norm_ (_get_total_norm's _foreach_norm,
    # _clip_grads_with_norm_'s _foreach_mul_), clip_grad_value_ and
    # swa_utils by _foreach_utils' _has_foreach_support.
    import torch.utils._foreach_utils as fu
    if FakeTensor not in fu._foreach_supported_types:
        fu._foreach_supported_types.append(FakeTensor)
    # GradScaler: no inf or NaN found, the step is taken (an assumption);
    # under --values cpu, where unscale_'s
    # _amp_foreach_non_finite_check_and_unscale_ ran on the gradients'
    # values and found_inf has them, GradScaler's own test (a step with
    # an inf or NaN skipped, and the scale backed off, as in the real run).
    from torch.amp import grad_scaler
    own_step = grad_scaler.GradScaler._maybe_opt_step

    def _maybe_opt_step(self, optimizer, optimizer_state, *a, **k):
        vs = getattr(getattr(rec, "known", None), "values", None)
        found = list(optimizer_state.get("found_inf_per_device",
                                         {}).values())
        if vs is not None and vs.cpu and found and \
                all(vs.real(f) is not None for f in found):
            return own_step(self, optimizer, optimizer_state, *a, **k)
        rec.assume("gradscaler:no-overflow")
        return optimizer.step(*a, **k)

    grad_scaler.GradScaler._maybe_opt_step = _maybe_opt_step
    # torch.compile (and Module.compile): the compiled program (compiled.py).
    from . import compiled
    compiled.install(torch, rec)


# -- the ops whose output size depends on data ---------------------------------
# The ops whose sizes _dynamic's own rules give (beside the aten ops
# tagged dynamic_output_shape and other libraries' operators).
_DYNAMIC_RULES = frozenset((
    "nonzero", "argwhere", "masked_select", "_unique2", "unique_dim",
    "unique_consecutive", "_unique", "repeat_interleave", "bincount"))


def _may_be_dynamic(torch, func, name):
    """Whether _dynamic can answer FUNC (an OpOverload named NAME): the
    ops of values.Values.dynamic (not an aten op, or one tagged
    dynamic_output_shape) and those of _dynamic's rules.  Every other op
    gets None from both, asked or not."""
    return getattr(func, "namespace", "aten") != "aten" or \
        torch.Tag.dynamic_output_shape in func.tags or \
        name in _DYNAMIC_RULES


def unique_flags(name, args, kwargs):
    """(return_inverse, return_counts) of a unique op NAME's call:
    _unique2(self, sorted, return_inverse, return_counts), _unique(self,
    sorted, return_inverse), unique_dim(self, dim, sorted,
    return_inverse, return_counts), unique_consecutive(self,
    return_inverse, return_counts, dim)."""
    kwargs = kwargs or {}
    k = {"unique_consecutive": 1, "unique_dim": 3}.get(name, 2)
    inv = args[k] if len(args) > k else kwargs.get("return_inverse", False)
    cnt = name != "_unique" and (
        args[k + 1] if len(args) > k + 1 else
        kwargs.get("return_counts", False))
    return bool(inv), bool(cnt)


def _dynamic(torch, rec, func, args, kwargs):
    """An output for a data-dependent op, or None for any other op.
    Sizes come from the values where they are known (values.py: exact
    values, MoE routing); the rules below are for values of unknown
    origin (docs/recording-values.md)."""
    frac = rec.opt.dynamic_fraction
    name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") \
        else str(func)
    vs = rec.known.values
    try:
        out = vs.dynamic(func, name, args, kwargs)
    except Exception as e:   # (values.Refused is no Exception: it stops)
        if vs.in_func:
            raise            # the operator's own error
        vs.lost(name, e)
        out = None
    if out is not None:
        return out
    x = args[0] if args else None
    if name in ("nonzero", "argwhere"):
        # (at most the elements that can be nonzero: Values.nonzero_bound)
        n = vs.count(x, frac)
        values.assume(rec, "nonzero", n)
        out = torch.empty((n, x.dim()), dtype=torch.long, device=x.device)
        vs.nonzero_indices(out, tuple(x.shape))
        return out
    if name == "masked_select":
        mask = args[1]
        n = vs.count(mask, frac, torch.broadcast_shapes(x.shape, mask.shape))
        values.assume(rec, "masked_select", n)
        return torch.empty((n,), dtype=x.dtype, device=x.device)
    if name in ("_unique2", "unique_dim", "unique_consecutive", "_unique"):
        # unique_dim(self, dim), unique_consecutive(..., dim): slices
        # along dim, the output x with n of them
        dim = args[1] if name == "unique_dim" and len(args) > 1 else \
            kwargs.get("dim", args[3] if name == "unique_consecutive" and
                       len(args) > 3 else None)
        if dim is not None and x.dim():
            dim %= x.dim()
            n = int(math.ceil(frac * x.shape[dim]))
            shape = list(x.shape)
            shape[dim] = n
            ishape = (x.shape[dim],)
        else:
            n = _distinct(vs, name, x, frac)
            if x.dtype == torch.bool:
                n = min(n, 2)       # (False and True at most)
            shape, ishape = [n], x.shape
        values.assume(rec, "unique", n)
        # the inverse and counts asked for, else empty, as the kernels
        # return them (compute_unique's at::empty({0}))
        want_inv, want_cnt = unique_flags(name, args, kwargs)
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
        inv = torch.empty(ishape if want_inv else (0,), dtype=torch.long,
                          device=x.device)
        cnt = torch.empty((n,) if want_cnt else (0,), dtype=torch.long,
                          device=x.device)
        if name == "_unique":
            return (out, inv)
        return (out, inv, cnt)
    if name == "repeat_interleave" and len(args) == 1:
        n = int(math.ceil(frac * x.numel()))
        values.assume(rec, "repeat_interleave", n)
        return torch.empty((n,), dtype=torch.long, device=x.device)
    if name == "bincount":
        # bins up to the largest value: minlength, or one per element
        w = args[1] if len(args) > 1 else kwargs.get("weights")
        ml = args[2] if len(args) > 2 else kwargs.get("minlength", 0)
        rg = vs.range(x)
        top = rg.int_top() if rg is not None and rg.integral and \
            math.isfinite(rg.hi) else None
        # bins up to the largest value the range allows (randint's high
        # - 1: drawn among many, the largest is that one)
        n = max(int(ml), x.numel() if top is None else top + 1)
        values.assume(rec, "bincount", n)
        return torch.empty((n,), dtype=torch.long if w is None else
                           torch.result_type(w, 1.0), device=x.device)
    if func.name() == "torchvision::nms":
        # the indices of the boxes kept: --dynamic-fraction of them
        n = int(math.ceil(frac * x.shape[0]))
        values.assume(rec, "nms", n)
        return torch.empty((n,), dtype=torch.long, device=x.device)
    return None


def _distinct(vs, name, x, frac):
    """How many distinct values (runs, for unique_consecutive) fake's
    rule gives X: where X's elements are uniform draws over n integers
    (Values.uniform: randint's, randperm's), their expectation (distinct:
    n (1 - (1 - 1/n)^k) of k draws; runs: 1 + (k - 1)(1 - 1/n));
    otherwise FRAC of the elements (--dynamic-fraction), at most the
    integers of X's range."""
    k = x.numel()
    u = vs.uniform(x)
    if u is not None and u.integral:
        n = u.count()
        if name == "unique_consecutive":
            return min(k, math.ceil(1 + (k - 1) * (1 - 1.0 / n) - 1e-9)) \
                if n > 0 and k > 0 else 0
        return values.distinct(n, k)
    n = int(math.ceil(frac * k))
    rg = vs.range(x)
    if rg is not None and rg.integral and math.isfinite(rg.lo) and \
            math.isfinite(rg.hi) and name != "unique_consecutive":
        n = min(n, rg.count())
    return n


def no_fake(func):
    """The error for FUNC, an op with no fake (meta) kernel on the GPU."""
    return RuntimeError(
        "%s has no fake (meta) kernel: its outputs on the GPU cannot "
        "be known without running it there (memsim record runs no GPU "
        "kernel; register one with torch.library.register_fake)" %
        func.name())


# ATen's error (TensorShape.cpp, view_impl's TORCH_CHECK) where a view of
# the asked shape cannot be made of the tensor's strides.
VIEW_STRIDE_ERROR = (
    "view size is not compatible with input tensor's size and stride (at "
    "least one dimension spans across two contiguous subspaces). Use "
    ".reshape(...) instead.")


def view_errors_as_aten(torch):
    """aten::view and aten::_unsafe_view of incompatible strides raise
    RuntimeError, as ATen's view does on the GPU.  PyTorch's fake kernel
    for both (torch._subclasses.fake_impls._view_meta, through
    torch._refs._reshape_view_helper) raises ValueError ("Cannot view a
    tensor with shape ..."), which a program's `except RuntimeError`
    (a fallback to .reshape) does not catch.  Only that error becomes
    ATen's; any other passes as it is."""
    try:
        import torch._subclasses.fake_impls as fi
        table = fi.op_implementations_dict
    except (ImportError, AttributeError):
        return
    aten = torch.ops.aten
    for op in (aten.view.default, aten._unsafe_view.default):
        impl = table.get(op)
        if impl is None or getattr(impl, "_memsim_view_error", False):
            continue

        def view(fake_mode, func, *args, _impl=impl, **kwargs):
            try:
                return _impl(fake_mode, func, *args, **kwargs)
            except ValueError as e:
                if not str(e).startswith("Cannot view a tensor"):
                    raise
                raise RuntimeError(VIEW_STRIDE_ERROR) from None
        view._memsim_view_error = True
        table[op] = view


def _item_value(rec, dtype, torch):
    """An unknown value's assumption (known.py and values.py answer the
    known ones); the same one asked again and again from one line stops
    the recording (known.Watch).  Each is an annotate row naming the
    program's line and the value (values.assume)."""
    watch = getattr(rec, "watch", None)
    if dtype == torch.bool:
        v = values.asserted()
        if v is not None:
            # an assert statement's test: it held (values.asserted)
            values.assume(rec, "item:assert", v)
            return v
        v = bool(getattr(rec.opt, "item_bool", False))
        values.assume(rec, "item:bool", v)
        if watch:
            watch.assumed("item:bool", v, ", or give the answer with "
                          "--item-bool %s" % ("false" if v else "true"))
        return v
    if dtype.is_floating_point or dtype.is_complex:
        kind = "item:optimizer" if rec.phase_optimizer else "item:float"
        values.assume(rec, kind, 1.0)
        if watch:
            watch.assumed(kind, 1.0, "")
        return 1.0
    values.assume(rec, "item:int", rec.opt.item_int)
    if watch:
        watch.assumed("item:int", rec.opt.item_int,
                      ", or give the answer with --item-int N")
    return rec.opt.item_int


def _host_values(rec, t, large=False):
    """A real CPU tensor for the fake tensor T that crosses to the host
    (.cpu(), .to("cpu"), a copy into a host tensor, .numpy()), of T's
    shape, dtype and strides, or None where T is larger than
    host.HOST_FAKE_BYTES (it stays fake) unless LARGE (.numpy(): an array
    needs real memory, as in the real run) or its values are a host
    tensor's (values.uploaded: the host holds them already).  Its values
    are values.py's (docs/recording-values.md): T's own where known, else
    a range's or the .item() rules' answer, an assumption host:<kind>
    counted once per tensor; a loop on values the fake run does not have
    stops."""
    import torch
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    if host.nbytes(t) > host.HOST_FAKE_BYTES and not large and \
            not values.uploaded(rec, t):
        rec.assume("host:large-stays-fake")
        return None
    vals = values.host_values(rec, t)
    from torch._prims_common import \
        is_non_overlapping_and_dense_or_false as is_non_overlapping_and_dense
    with values.HostSide(torch, unset_fake_temporarily):
        if is_non_overlapping_and_dense(t):
            out = torch.empty_strided(tuple(t.shape), tuple(t.stride()),
                                      dtype=t.dtype)
        else:
            out = torch.empty(tuple(t.shape), dtype=t.dtype)
        out.copy_(vals)
    return out


def metadata_subclasses(torch, ftm, FakeTensor, become):
    """Tensor subclasses of metadata only (MONAI's MetaTensor: a
    __torch_function__ that carries an affine and a dict along the
    tensor's ops, no __torch_dispatch__ of its own) on fake tensors.

    In eager PyTorch such a subclass changes nothing below Python: C++'s
    check_has_torch_dispatch finds Tensor's disabled __torch_dispatch__
    (torch._C._disabled_torch_dispatch_impl) and gives the tensor no
    Python dispatch key, so its ops dispatch as the plain tensor's, and
    Tensor.__torch_function__ (_convert) wraps each result by
    Tensor.as_subclass, an alias of the result under the subclass's type
    (THPVariable_as_subclass: THPVariable_NewWithVar(cls, self.alias())).

    FakeTensorMode refuses every such subclass but Parameter's
    (_check_for_subclass_arg): a DataLoader's CPU MetaTensor batch moved
    to the GPU (`batch.to(device)`) raised "Multiple dispatch failed for
    aten._to_copy".  Here any subclass whose __torch_dispatch__ is
    Tensor's is let through, as the real tensor it is (the mode's
    allow_non_fake_inputs converts it).  And as_subclass of a fake
    tensor, whose alias is a FakeTensor (the Python object its
    TensorImpl keeps, "already associated to a python object of type
    FakeTensor"), gives that alias the class (SUBCLASS, FakeTensor):
    the subclass's __torch_function__ and methods first, FakeTensor's
    __torch_dispatch__ and device.  The FakeTensor's own attributes
    (fake_device, fake_mode, the memos) move out of its __dict__ into a
    side table, read through properties of that class: a subclass that
    replaces or deep-copies __dict__ (MetaTensor's `ret.__dict__ =
    meta.__dict__.copy()`, its clone's deepcopy) sees its own metadata
    only, as on a real tensor."""
    import contextlib
    import torch.utils._pytree as pytree
    from torch.utils.weak import WeakIdKeyDictionary
    disabled = torch.Tensor.__torch_dispatch__
    orig_check = ftm._check_for_subclass_arg

    def check_for_subclass_arg(x):
        if isinstance(x, torch.Tensor) and \
                type(x).__torch_dispatch__ is disabled:
            return False
        return orig_check(x)

    ftm._check_for_subclass_arg = check_for_subclass_arg

    side = WeakIdKeyDictionary()
    fakes = {}       # the subclass -> its fake class
    base_of = {}     # the fake class -> the subclass
    made = {}        # the two classes below, at the first as_subclass

    def prop(name):
        def get(self):
            try:
                return side[self][name]
            except KeyError:
                raise AttributeError(name) from None

        def put(self, v):
            d = side.get(self)
            if d is None:
                d = side[self] = {}
            d[name] = v

        def delete(self):
            side.get(self, {}).pop(name, None)
        return property(get, put, delete)

    def dispatch(cls, func, types, args=(), kwargs=None):
        with plain_args(args, kwargs), \
                torch._C.DisableTorchFunctionSubclass():
            return FakeTensor.__torch_dispatch__(func, types, args, kwargs)

    def classes(names):
        """plain: a FakeTensor whose own attributes (NAMES) are the side
        table's, the class that ops see (plain_args).  base: the fake
        classes' base, FakeTensor's __torch_dispatch__ (through the
        Python key of the TensorImpl, which a real one has not), and
        Tensor's __torch_function__: FakeTensor's is disabled (its ops
        are not wrapped), and after the subclass's own in the MRO comes
        Tensor's, which the subclass's super().__torch_function__
        reaches in eager mode.  (Set after the class is made: a new
        subclass of a class with a __torch_dispatch__ gets the disabled
        one.)"""
        if not made:
            ns = {n: prop(n) for n in names}
            ns["__module__"] = FakeTensor.__module__
            plain = type("FakeTensor", (FakeTensor,), ns)
            base = type("FakeTensor", (plain,),
                        {"__module__": FakeTensor.__module__,
                         "__torch_dispatch__": classmethod(dispatch)})
            base.__torch_function__ = \
                torch.Tensor.__dict__["__torch_function__"]
            made.update(plain=plain, base=base)
        return made["base"]

    def fake_class(cls, names):
        f = fakes.get(cls)
        if f is None:
            f = fakes[cls] = type(cls.__name__, (cls, classes(names)), {
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__})
            # The metaclass gave F the disabled __torch_function__ where
            # the subclass has none of its own (F has a __torch_dispatch__
            # and would inherit Tensor's): without it, F's lookup goes on
            # to Tensor's in the base, so that each op's result is the
            # subclass as in eager mode (BigGAN's Distribution: G's
            # output, then its .cpu(), are Distributions).
            if f.__dict__.get("__torch_function__") is \
                    torch._C._disabled_torch_function_impl:
                del f.__torch_function__
            base_of[f] = cls
        return f

    none = contextlib.nullcontext()

    def plain_args(args, kwargs):
        """An op's arguments of a fake subclass as plain fake tensors
        while the op runs: an eager ATen kernel sees no Python, and the
        fake mode's Python decompositions call tensor methods (pow's
        reference `a.clone()`), which would be the subclass's
        (MetaTensor.clone: a new MetaTensor, its default affine a
        torch.eye, inside the fake mode's kernel).  Every op enters it:
        until a subclass is made, a context that does nothing."""
        return swapped_args(args, kwargs) if base_of else none

    @contextlib.contextmanager
    def swapped_args(args, kwargs):
        swapped = []
        for t in pytree.tree_leaves((args, kwargs)):
            c = type(t)
            if c in base_of:
                t.__class__ = made["plain"]
                swapped.append((t, c))
        try:
            yield
        finally:
            for t, c in swapped:
                t.__class__ = c

    orig = torch._C.TensorBase.as_subclass

    def as_subclass(self, cls):
        cls = base_of.get(cls, cls)
        if not isinstance(self, FakeTensor) or \
                not isinstance(cls, type) or issubclass(FakeTensor, cls) or \
                cls.__torch_dispatch__ is not disabled:
            with torch._C.DisableTorchFunctionSubclass():
                return orig(self, cls)
        with torch._C.DisableTorchFunctionSubclass():
            r = torch.ops.aten.alias.default(self)
        own = r.__dict__
        f = fake_class(cls, list(own))
        keep = {n: own.pop(n) for n in list(own)
                if isinstance(getattr(f, n, None), property) and
                n not in cls.__dict__}
        side[r] = keep
        r.__class__ = f
        return r

    torch.Tensor.as_subclass = as_subclass

    # SUBCLASS(t) of a subclass with no __new__ of its own (BigGAN's
    # `Distribution(torch.randn(...))`, then `.data = ...to(device)`):
    # torch.Tensor's constructor, whose one-tensor form is the legacy
    # "new(Tensor other)" (tensor_new.cpp: other.alias() for the base
    # constructor, any device and dtype), the alias then given the
    # subclass's type (THPVariable_NewWithVar), as as_subclass does.
    # Under the recorder's dispatch mode that alias comes back from
    # Python with a Python object of its own, which NewWithVar refuses
    # ("already associated to a python object of type Tensor"): a fake
    # tensor's alias takes the subclass's fake class (as_subclass
    # above), a host tensor's is made below the mode (a view, no memory
    # of the device).  Other forms go to the constructor as they were.
    base_new = torch._C.TensorBase.__new__

    def sub_new(*args, **kwargs):
        cls, rest = args[0], args[1:]
        if len(rest) == 1 and not kwargs and \
                isinstance(rest[0], torch.Tensor):
            t = rest[0]
            if isinstance(t, FakeTensor):
                return as_subclass(t, cls)
            with torch._C._DisableTorchDispatch():
                return base_new(cls, t)
        return base_new(cls, *rest, **kwargs)

    # And such a host tensor given a device's data (`new_obj.data =
    # super().to(device)`): set_data makes the host tensor the device
    # tensor, its class and attributes kept.  Here the device tensor is
    # fake: the subclass's fake class above takes the host tensor's
    # place in the same Python object (swap_tensors), with the host
    # tensor's own attributes.
    data = torch._C.TensorBase.data

    def set_data(self, value):
        if isinstance(self, FakeTensor) or \
                not isinstance(value, FakeTensor):
            _set(self, value)
            return
        r = as_subclass(value, type(self))
        keep = side.pop(r, None)
        own = dict(self.__dict__)
        r.requires_grad_(self.requires_grad)
        if not become(self, r, value):
            raise RuntimeError("memsim record: cannot give the %s its "
                               "device data (.data =)" % type(self).__name__)
        if keep is not None:
            side[self] = keep
        self.__dict__.update(own)

    def _set(self, value):
        """The setter of .data that the class had without set_data
        (FakeTensor's own, _patch_cuda's; or set_data's of C++)."""
        for c in type(self).__mro__:
            d = c.__dict__.get("data")
            if d is not None and d is not prop_data:
                return d.__set__(self, value)
        return data.__set__(self, value)

    prop_data = property(data.__get__, set_data)

    def init_subclass(cls, **kwargs):
        super(torch.Tensor, cls).__init_subclass__(**kwargs)
        if cls.__new__ is base_new and cls.__torch_dispatch__ is disabled:
            cls.__new__ = staticmethod(sub_new)
            cls.data = prop_data

    torch.Tensor.__init_subclass__ = classmethod(init_subclass)
    return plain_args


def _fake_deepcopy(self, memo):
    """copy.deepcopy of a fake tensor (nn.TransformerEncoder's _get_clones
    deep-copies its layer, weights included).  Tensor.__deepcopy__ sets a
    storage copy into a new tensor (set_), and the fake mode gives each
    view of such a tensor a storage of its own: every weight.t() of a
    forward was recorded as a weight-sized allocation.  Here the copy is a
    clone (the new storage a deepcopy makes, on the tensor's device), with
    requires_grad, the grad and the Python attributes copied as
    Tensor.__deepcopy__ copies them; a plain tensor's deepcopy also
    allocates and frees the scalar it sets the copy into.  A fake
    parameter is a FakeTensor marked _is_param (Parameter.__new__ of a
    tensor subclass), whose copy Parameter.__deepcopy__ makes by a clone
    alone."""
    import copy
    import torch
    if id(self) in memo:
        return memo[id(self)]
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user "
                           "(graph leaves) support the deepcopy protocol "
                           "at the moment.")
    with torch.no_grad():
        new = self.clone(memory_format=torch.preserve_format)
        if not getattr(self, "_is_param", False):
            # Tensor.__deepcopy__ (not Parameter's, a clone alone) sets
            # the storage copy into self.new_empty([]): that scalar is
            # allocated after the copy and freed by set_.
            self.new_empty(())
    new.requires_grad_(self.requires_grad)
    if self.grad is not None:
        new.grad = _fake_deepcopy(self.grad, memo)
    for k, v in self.__dict__.items():
        if k not in new.__dict__:
            new.__dict__[k] = copy.deepcopy(v, memo)
    memo[id(self)] = new
    return new


SDP_FLASH, SDP_EFFICIENT, SDP_MATH, SDP_CUDNN = 1, 2, 0, 3

# Attention ops whose kernels allocate temporaries (kernels.py): the
# kernel, and whether the op is a backward (query is its second argument).
SDPA_KERNELS = {
    "_scaled_dot_product_cudnn_attention": ("cudnn", False),
    "_scaled_dot_product_cudnn_attention_backward": ("cudnn", True),
    "_scaled_dot_product_efficient_attention_backward": ("efficient", True),
    "_scaled_dot_product_flash_attention_backward": ("flash", True),
}
KERNEL_SITES = {
    "_foreach_norm": "foreach_tensor_norm_cuda temporaries",
    "_foreach_max": "foreach_tensor_max_cuda temporaries",
    "native_batch_norm_backward": "batch_norm_backward_cuda temporaries",
    "binary_cross_entropy_with_logits":
        "binary_cross_entropy_with_logits log_sigmoid and loss",
    "cumsum": "cumsum_out temporaries",
    "cumprod": "cumprod_out temporaries",
    "_linalg_svd": "_linalg_svd_out info and svd_cusolver temporaries",
    "nonzero": "nonzero_out_cuda temporaries",
    "_unique2": "unique_cuda_template temporaries",
    "_unique": "unique_cuda_template temporaries",
    "unique_consecutive": "unique_cuda_template temporaries",
    "roll": "roll_cuda contiguous copy and roll_common dims",
    "_index_put_impl_": "index_put_with_sort_kernel temporaries",
    "index": "index expandTensors mask.nonzero()",
    "index_put_": "index_put_ temporaries",
    "index_put": "index_put_ temporaries",
    "_to_copy": "copy_kernel_cuda host values on the GPU",
    "sort": "sort_cuda_kernel temporaries",
    "multinomial": "multinomial temporaries",
    "sum": "gpu_reduce_kernel global buffer",
    "_softmax_backward_data": "softmax_backward_cuda_out grad * output",
    "topk": "launch_gather_topk_kernel contiguous input",
    "abs": "unary_op_impl_with_complex_to_float_out complex_result",
    "angle": "unary_op_impl_with_complex_to_float_out complex_result",
    "_softmax": "host_softmax contiguous input",
    "_log_softmax": "host_softmax contiguous input",
    "_log_softmax_backward_data": "host_softmax_backward contiguous copies",
    "mean": "gpu_reduce_kernel global buffer",
    "convolution": "cudnn run_conv_plan workspace",
    "convolution_backward": "cudnn run_conv_plan workspace (backward)",
    "convolution_backward bias": "gpu_reduce_kernel global buffer",
    "_scaled_dot_product_cudnn_attention": "cudnn run_cudnn_SDP_fprop workspace",
    "_scaled_dot_product_cudnn_attention_backward":
        "cudnn run_cudnn_SDP_bprop workspace",
    "_scaled_dot_product_efficient_attention_backward":
        "_efficient_attention_backward temporaries",
    "_scaled_dot_product_flash_attention_backward":
        "_flash_attention_backward temporaries",
    "native_group_norm": "GroupNormKernelImplInternal a and b",
    "native_batch_norm":
        "batch_norm_stats_channels_last_cuda_template staging",
    "mse_loss": "mse_loss_out elementwise loss",
    "smooth_l1_loss": "smooth_l1_loss_out elementwise loss",
    "huber_loss": "huber_loss_out elementwise loss",
    "native_group_norm_backward":
        "GroupNormBackwardKernelImplInternal temporaries",
}


def _sdp_choice(torch, rec, args, kwargs, major):
    """The backend sdp_utils' select_sdp_backend() would take on the named
    device: flash for fp16/bf16 on sm80+ with head_dim <= 256 and no
    attn_mask; memory-efficient attention otherwise on sm50+ (fp32 and
    masks included); math on older devices."""
    q, k, v = args[:3]
    mask = args[3] if len(args) > 3 else kwargs.get("attn_mask")
    fits = _sdp_fits(torch, q, mask, major, k, v)
    order = [SDP_FLASH, SDP_EFFICIENT, SDP_MATH]
    order = [SDP_CUDNN] + order if fits[SDP_CUDNN] else order + [SDP_CUDNN]
    # The backends the program left enabled (torch.backends.cuda's
    # flags, which torch.nn.attention.sdpa_kernel sets): select_sdp_backend
    # takes the first of its order that is enabled and applies.
    enabled = _sdp_enabled(torch)
    for b in order:
        if fits[b] and enabled[b]:
            return b
    raise RuntimeError("No available kernel. Aborting execution.")


def _sdp_fits(torch, q, mask, major, k, v):
    """Which backends take a query Q, key K and value V (their head
    dimensions; Q's dtype) and MASK on a device of compute capability
    MAJOR (sdp_utils' checks).  The value's head dimension may differ from
    the query's and key's (DeepSeek's multi-head latent attention: 192 for
    queries and keys, 128 for values): check_head_dim_size_flash wants all
    three equal (at most 256); check_head_dim_size_mem_efficient the
    query's equal to the key's and both the query's and the value's a
    multiple of the GEMM alignment; check_cudnn_tensor_shapes both at most
    128 and multiples of 8, or on sm90/sm10x (cuDNN 9.11 on) the query's
    192 with the value's 128.  check_last_dim_stride_equals_1_dense, among
    every fused backend's checks of dense (not nested) inputs: the last
    dimension of Q, K and V at stride 1 (cuDNN and flash let a head
    dimension of 1 pass) and, on the GPU, the mask's as the program passed
    it, before a boolean one is made additive.  A mask expanded along the
    keys has stride 0 there (transformers' bidirectional mask under Dynamo:
    `q_idx >= 0` expanded to (batch, 1, q, kv)), and only math takes it."""
    d, dk, dv = q.shape[-1], k.shape[-1], v.shape[-1]
    dense = not any(t.is_nested for t in (q, k, v))
    unit = not dense or all(t.stride(-1) == 1 for t in (q, k, v))
    unit_mask = not dense or mask is None or mask.stride(-1) == 1
    half = q.dtype in (torch.float16, torch.bfloat16)
    align = _gemm_alignment(torch, q.dtype, major)
    # On sm90 PyTorch 2.11 ran cuDNN attention for fp16/bf16 (the H200
    # snapshots' frames show at::native::_cudnn_attention_forward/backward):
    # first where it applies, else last.
    cudnn_dims = (d <= 128 and dv <= 128) or (d == 192 and dv == 128)
    # check_cudnn_deterministic, among can_use_cudnn_attention's general
    # constraints: torch.use_deterministic_algorithms(True) (not
    # warn_only) rules cuDNN attention out, whether or not a gradient is
    # wanted; select_sdp_backend goes on to flash or memory-efficient
    # attention.
    strict = kernels.deterministic_strict(torch)
    return {SDP_CUDNN: major in (9, 10) and half and cudnn_dims and
            d % 8 == 0 and dv % 8 == 0 and (unit or d == 1) and unit_mask
            and not strict,
            SDP_FLASH: major >= 8 and half and mask is None and d <= 256
            and d == dk == dv and (unit or d == 1),
            SDP_EFFICIENT: major >= 5 and d == dk and d % align == 0 and
            dv % align == 0 and unit and unit_mask,
            SDP_MATH: True}


def _patch_tensor_data(torch):
    """torch.tensor / torch.as_tensor of a list or tuple (nested) holding
    GPU tensors: yolov5's detect.py writes each box as
    `torch.tensor(xyxy)`, xyxy the 0-dim CUDA tensors of a row of the
    detections.  PyTorch builds the result on the host
    (internal_new_from_data: at::empty, then recursive_store reads each
    element, item() for a tensor, with the Python dispatch key excluded),
    so a CUDA element is read with the GPU's _local_scalar_dense, past
    the recorder's mode: a CPU build has no such kernel, a CUDA build
    initializes CUDA (no driver).  Each fake element is read here first,
    as .cpu() reads it (its values, or the rules' answer, counted), and the
    original function gets the host tensor in its place: the same
    element, dtype and shape, so that the result's dtype and shape are
    inferred as from the GPU tensor."""
    from torch._subclasses.fake_tensor import FakeTensor

    def has_fake(data, depth=0):
        if isinstance(data, FakeTensor):
            return True
        if isinstance(data, (list, tuple)) and depth < 64:
            return any(has_fake(x, depth + 1) for x in data)
        return False

    def host(data):
        if isinstance(data, FakeTensor):
            return data.detach().cpu() if data.device.type != "cpu" \
                else data
        if isinstance(data, (list, tuple)):
            return type(data)(host(x) for x in data) \
                if type(data) in (list, tuple) else [host(x) for x in data]
        return data

    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._device import DeviceContext

    def default_device():
        """The device of the innermost DeviceContext (torch.set_default_device,
        `with torch.device(...)`), or None.  Its __torch_function__ gives
        a constructor of _device_constructors() that device when none is
        named; that set holds whatever torch.tensor was when it was first
        asked for, this wrapper, and the original it calls is not in it:
        without this, torch.tensor and torch.as_tensor made host tensors
        under set_default_device("cuda") (llama-models' Llama3.build sets
        it, then generate's torch.tensor(stop_tokens) met the GPU's tokens
        in torch.isin: "test_elements is on cpu")."""
        for mode in reversed(_get_current_function_mode_stack()):
            if isinstance(mode, DeviceContext):
                return mode.device
        return None

    def compiling(orig, data, *args, **kwargs):
        """torch.tensor or torch.as_tensor where Dynamo traces this
        wrapper (a compiled frame calls it).  Dynamo knows PyTorch's own
        by the object torch.tensor was, this wrapper, and traces into it:
        the original is a builtin it does not know (a graph break, and
        data of 0-dim tensors met the real constructor:
        _local_scalar_dense on CUDA, Qwen2-VL's get_rope_index under the
        Trainer's --torch_compile).  Its rule for torch.tensor
        (TorchInGraphFunctionVariable's handle_torch_tensor) puts
        torch._refs.tensor in the graph where the data holds tensors or
        symbolic numbers, the constructor itself for constants; here
        torch._refs.tensor for any data but a tensor (for constants the
        same tensor).  torch.as_tensor keeps the original (a graph
        break, as before)."""
        if orig is torch_tensor and not isinstance(data, torch.Tensor):
            return torch._refs.tensor(data, *args, **kwargs)
        return orig(data, *args, **kwargs)

    torch_tensor = torch.tensor

    def wrap(orig):
        def ctor(data, *args, **kwargs):
            if torch.compiler.is_compiling():
                return compiling(orig, data, *args, **kwargs)
            if isinstance(data, (list, tuple)) and has_fake(data):
                data = host(data)
            if kwargs.get("device") is None:
                dev = default_device()
                if dev is not None:
                    kwargs["device"] = dev
            return orig(data, *args, **kwargs)
        functools.update_wrapper(ctor, orig)
        return ctor

    from torch.jit import _builtins as jb
    for name in ("tensor", "as_tensor"):
        ctor = wrap(getattr(torch, name))
        setattr(torch, name, ctor)
        # TorchScript compiles a Python function that a scripted one
        # calls (ZeroRedundancyOptimizer's import scripts
        # _FunctionalAdadelta, whose __init__ calls torch.tensor), except
        # an operator's builtin: the wrapper stays aten::NAME for it.
        jb._register_builtin(ctor, "aten::" + name)


def _patch_legacy_types(torch):
    """The legacy tensor types of torch.cuda (FloatTensor, LongTensor...;
    `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`,
    then Tensor(n, 1), Tensor(numpy array), x.type(Tensor)) where no GPU
    is: a CPU build's refuse to construct ("Torch not compiled with CUDA
    enabled"), and Tensor.type to a CUDA type initializes CUDA
    (THPVariable_type's dispatch_to).  Each becomes a class whose call is
    legacy_tensor_ctor's: sizes (ints or a torch.Size) give an
    uninitialized tensor, a sequence or array its values in the type's
    dtype, a tensor of the type itself; isinstance() tests device and
    dtype as the type's own check does.  Tensor.type(T) of a CUDA type or
    on a CUDA tensor is .to(device, dtype); torch.set_default_tensor_type
    of a CUDA type is set_default_dtype and set_default_device("cuda"),
    and torch.Tensor(...) then makes CUDA tensors: the base constructor
    (base_tensor_ctor) builds on the default tensor type's dispatch key
    and scalar type, which set_default_device does not change (no GPU
    build lets the key be CUDA): no arguments an empty tensor, sizes an
    uninitialized one, a sequence or array its values, all on the GPU in
    the default dtype; a tensor an alias of it whatever its device and
    dtype (legacy_tensor_generic_ctor_new's BASE_CTOR); device= other
    than CUDA refused (check_legacy_ctor_device)."""
    cuda0 = torch.device("cuda", 0)

    class _Meta(type):
        def __call__(cls, *args, device=None):
            if not args:
                return torch.empty(0, dtype=cls.dtype, device=cuda0)
            a = args[0]
            if len(args) == 1 and isinstance(a, torch.Tensor):
                if a.dtype != cls.dtype or a.device.type != "cuda":
                    raise TypeError("expected %s (got %s)" % (
                        cls.__module__ + "." + cls.__name__, a.type()))
                return torch.ops.aten.alias(a)
            if isinstance(a, torch.Size) or all(
                    isinstance(x, int) and not isinstance(x, bool)
                    for x in args):
                size = a if isinstance(a, torch.Size) else args
                return torch.empty(size, dtype=cls.dtype, device=cuda0)
            if len(args) > 1:
                raise TypeError("%s(): sizes must be ints" % cls.__name__)
            return torch.tensor(a, dtype=cls.dtype, device=cuda0)

        def __instancecheck__(cls, x):
            return (isinstance(x, torch.Tensor) and x.device.type == "cuda"
                    and x.dtype == cls.dtype and x.layout == torch.strided)

    # a legacy type's dict is a copy of torch.Tensor's (its methods:
    # torch.cuda.FloatTensor.abs), py_initialize_tensor_type
    methods = {k: v for d in (vars(torch._C.TensorBase), vars(torch.Tensor))
               for k, v in d.items() if not k.startswith("__")}
    cuda_types = {}
    for name in [n for n in dir(torch.cuda) if n.endswith("Tensor")]:
        host = getattr(torch, name, None)
        if not isinstance(getattr(host, "dtype", None), torch.dtype):
            continue
        cls = _Meta(name, (), dict(methods, dtype=host.dtype, is_cuda=True,
                                   is_sparse=False, layout=torch.strided,
                                   __module__="torch.cuda"))
        setattr(torch.cuda, name, cls)
        cuda_types[name] = cls

    class _SparseMeta(type):
        # legacy_sparse_tensor_generic_ctor_new: (indices, values, size)
        # is _sparse_coo_tensor_with_dims_and_tensors of the two, no
        # check of the indices (sparse_coo_tensor with check_invariants
        # off makes the same op); (indices, values) sparse_coo_tensor,
        # its size from the indices; sizes an empty sparse tensor
        def __call__(cls, *args, device=None):
            if len(args) in (2, 3) and isinstance(args[0], torch.Tensor) \
                    and isinstance(args[1], torch.Tensor):
                size = (tuple(args[2]),) if len(args) == 3 else ()
                return torch.sparse_coo_tensor(
                    args[0], args[1], *size, dtype=cls.dtype, device=cuda0,
                    check_invariants=False)
            size = args[0] if len(args) == 1 and \
                isinstance(args[0], torch.Size) else args
            if not all(isinstance(x, int) and not isinstance(x, bool)
                       for x in size):
                raise TypeError("%s(): expected indices and values, or "
                                "sizes" % cls.__name__)
            return torch.empty(size or (0,), dtype=cls.dtype,
                               layout=torch.sparse_coo, device=cuda0)

        def __instancecheck__(cls, x):
            return (isinstance(x, torch.Tensor) and x.device.type == "cuda"
                    and x.dtype == cls.dtype and x.is_sparse)

    # torch.cuda.sparse's (GPyTorch's make_sparse_from_indices_and_values:
    # getattr(torch.cuda.sparse, "FloatTensor")(indices, values, size))
    for name in [n for n in dir(torch.cuda.sparse) if n.endswith("Tensor")]:
        host = getattr(torch, name, None)
        if not isinstance(getattr(host, "dtype", None), torch.dtype):
            continue
        cls = _SparseMeta(name, (), dict(
            methods, dtype=host.dtype, is_cuda=True, is_sparse=True,
            layout=torch.sparse_coo, __module__="torch.cuda.sparse"))
        setattr(torch.cuda.sparse, name, cls)

    def target(t):
        """(device type, dtype) that T names, a legacy type or its
        dotted name; or None (a dtype, a sparse type)."""
        if isinstance(t, str):
            mod, _, name = t.rpartition(".")
        elif isinstance(t, type) and hasattr(t, "is_cuda"):
            mod, name = t.__module__, t.__name__
        else:
            return None
        if mod not in ("torch", "torch.cuda") or getattr(
                getattr(torch, name, None), "is_sparse", True):
            return None
        return ("cuda" if mod == "torch.cuda" else "cpu",
                getattr(torch, name).dtype)

    orig_type = torch.Tensor.type

    def type_(self, dtype=None, non_blocking=False, **kwargs):
        if isinstance(dtype, torch.dtype):
            # PyTorch's Tensor.type with a dtype (THPVariable_type):
            # dispatch_to(self, dtype, non_blocking, copy=False,
            # memory_format), Tensor.to's conversion (self when the dtype
            # is already right).  Said as Tensor.to, not as the method
            # descriptor orig_type, which Dynamo cannot trace: under
            # torch.compile(fullgraph=True) transformers' DeepSeek-V2
            # gate (hidden_states.type(torch.float32)) stopped there.
            mf = kwargs.get("memory_format", torch.preserve_format)
            return self.to(dtype=dtype, non_blocking=non_blocking,
                           memory_format=mf)
        to = target(dtype) if dtype is not None else None
        if to is None or (to[0] == "cpu" and self.device.type == "cpu"):
            return orig_type(self, dtype, non_blocking, **kwargs)
        return self.to(device=to[0], dtype=to[1],
                       non_blocking=non_blocking or
                       bool(kwargs.get("async", False)))
    type_.__doc__ = orig_type.__doc__
    torch.Tensor.type = type_

    orig_default = torch.set_default_tensor_type
    on_cuda = [False]
    base_new = torch.Tensor.__new__

    # (*args, **kwargs): Dynamo's polyfill of torch.Tensor.__new__
    # (substitute_in_graph) accepts only that signature besides its own
    def tensor_new(*args, **kwargs):
        cls, args = args[0], args[1:]
        if cls is not torch.Tensor or not on_cuda[0] or \
                set(kwargs) - {"device"}:
            return base_new(cls, *args, **kwargs)
        device = kwargs.get("device")
        device = cuda0 if device is None else torch.device(device)
        if device.type != "cuda":
            raise RuntimeError("legacy constructor expects device type: "
                               "cuda but device type: %s was passed"
                               % device.type)
        dtype = torch.get_default_dtype()
        if not args:
            return torch.empty(0, dtype=dtype, device=device)
        a = args[0]
        if len(args) == 1 and isinstance(a, torch.Tensor):
            return base_new(cls, a)         # other.alias()
        if isinstance(a, torch.Size) or all(
                isinstance(x, int) and not isinstance(x, bool)
                for x in args):
            size = a if isinstance(a, torch.Size) else args
            return torch.empty(size, dtype=dtype, device=device)
        if len(args) > 1:
            return base_new(cls, *args, **kwargs)   # its own TypeError
        if not hasattr(type(a), "__getitem__"):     # PySequence_Check
            raise TypeError("new(): data must be a sequence (got %s)"
                            % type(a).__name__)
        return torch.tensor(a, dtype=dtype, device=device)

    def set_default_tensor_type(t, /):
        to = target(t)
        if to is not None and to[0] == "cuda":
            torch.set_default_dtype(to[1])
            torch.set_default_device("cuda")
            on_cuda[0] = True
            # installed at the first such call only: every other program
            # keeps the C constructor
            if torch.Tensor.__new__ is base_new:
                torch.Tensor.__new__ = staticmethod(tensor_new)
            return None
        if on_cuda[0]:      # a host type after a CUDA one
            torch.set_default_device(None)
            on_cuda[0] = False
        return orig_default(t)
    set_default_tensor_type.__doc__ = orig_default.__doc__
    torch.set_default_tensor_type = set_default_tensor_type


def _patch_jagged_sdpa(torch, major):
    """Jagged nested tensors' attention (jagged_scaled_dot_product_attention)
    asks torch.backends.cuda's can_use_flash_attention and
    can_use_efficient_attention, which a build without CUDA answers False
    (then the math path makes a strided nested tensor, which has no fake
    kernel): answered as on the device, by the dense rules' head dimension
    and dtype checks and the enabled flags; cuDNN, last in the jagged
    order, is not taken."""
    try:
        import torch.nested._internal.sdpa as jsdpa
    except ImportError:
        return
    names = {SDP_FLASH: "can_use_flash_attention",
             SDP_EFFICIENT: "can_use_efficient_attention"}
    for b, name in names.items():
        if not hasattr(jsdpa, name):
            continue

        def can(params, debug=False, b=b):
            return _sdp_enabled(torch)[b] and _sdp_fits(
                torch, params.query, params.attn_mask, major,
                params.key, params.value)[b]
        setattr(jsdpa, name, can)
    if hasattr(jsdpa, "can_use_cudnn_attention"):
        jsdpa.can_use_cudnn_attention = lambda params, debug=False: False


_SDP_FLAGS = []


def _preprocess_mask(rec, mask, query, key):
    """scaled_dot_product_attention's preprocess_mask before
    memory-efficient attention: a mask whose strides are not multiples of
    8 elements (aligned_tensor<8>), or whose last stride is not 1, is
    padded by pad_bias<8> (at::pad to the next multiple of 8 past its
    last size, always at least one element, then sliced back): a new
    tensor at the padded size, which the kernel keeps for backward; then
    expanded to the attention's batch, heads, queries and keys.  Under
    --symbolic a symbolic stride is tested at its value, without a guard
    (one would pin the size): the trace holds for the sizes that pad as
    that one does, an assumption (sdpa:mask-alignment)."""
    import torch
    from .compiled import _hint

    strides = mask.stride()
    if not all(isinstance(s, int) for s in strides):
        rec.assume("sdpa:mask-alignment")
    if not (all(_hint(s) % 8 == 0 for s in strides[:-1]) and
            _hint(strides[-1]) == 1):
        n = mask.shape[-1]
        mask = torch.nn.functional.pad(mask, (0, 8 - n % 8))[..., :n]
    return mask.expand(query.shape[0], query.shape[1], query.shape[2],
                       key.shape[2])


def _sdp_flags(torch):
    """A function giving the enabled flags of cuDNN, flash, memory-
    efficient and math attention.  Under torch.compile Dynamo traces the
    replacement of scaled_dot_product_attention: the flags are read as a
    constant of the graph (torch._dynamo.assume_constant_result), as
    Dynamo treats the backend choice, not a call that breaks the graph in
    two."""
    if not _SDP_FLAGS:
        bc = torch.backends.cuda

        def flags():
            return (bc.cudnn_sdp_enabled(), bc.flash_sdp_enabled(),
                    bc.mem_efficient_sdp_enabled(), bc.math_sdp_enabled())
        try:
            flags = torch._dynamo.assume_constant_result(flags)
        except AttributeError:
            pass
        _SDP_FLAGS.append(flags)
    return _SDP_FLAGS[0]


def _sdp_enabled(torch):
    """Each backend (SDP_CUDNN, ...) -> whether the program left it
    enabled (_sdp_flags)."""
    return dict(zip((SDP_CUDNN, SDP_FLASH, SDP_EFFICIENT, SDP_MATH),
                    _sdp_flags(torch)()))


def _gemm_alignment(torch, dtype, major):
    """sdp_utils' minimum_gemm_alignment, the head dimension's alignment
    that check_head_dim_size_mem_efficient asks: 4 elements on sm80+, 1
    before; with tensor cores (sm80+, or sm70+ for fp16/bf16) at least
    128 bits (8 halves, 4 floats).  (The H200's trace of a 2-head fp32
    model of width 200, head dimension 100, runs memory-efficient
    attention: corpus program lightning-fabric-lm.)"""
    half = dtype in (torch.float16, torch.bfloat16)
    align = 4 if major >= 8 else 1
    if major >= 8 or (major >= 7 and half):
        align = max(align, 128 // (16 if half else 32))
    return align


def share_hop_rules(torch, mode, base):
    """Gives MODE, a subclass of the mode class BASE, BASE's rule for each
    higher-order operator that has one and none for MODE; returns the
    undo.  A higher-order operator at the Python key takes the rule of
    the current mode's exact type (HigherOrderOperator.dispatch looks
    type(mode) up in python_key_table, no MRO), so a FakeTensorMode
    subclass found none and stopped ("There was no rule registered for
    HigherOrderOperator run_dtensor_rng_op": FSDP2's parameter init on
    DTensors).  The rule is called with MODE's instance as BASE's would
    be with its own: most (register_fake) hand the operator to the mode's
    __torch_dispatch__, FakeTensorMode's, which runs the operator's fake
    function under the mode (run_dtensor_rng_op's runs the random op on
    the local shard; its output, if any, is a fake tensor seen as any
    other).  Operators registered when PyTorch is imported: all of them
    in torch 2.13."""
    from torch._ops import _higher_order_ops
    added = []
    for hop in list(_higher_order_ops.values()):
        table = hop.python_key_table
        rule = table.get(base)
        if rule is not None and mode not in table:
            table[mode] = rule
            hop._dispatch_cache.clear()
            added.append(hop)

    def undo():
        for hop in added:
            if hop.python_key_table.get(mode) is \
                    hop.python_key_table.get(base):
                del hop.python_key_table[mode]
                hop._dispatch_cache.clear()
    return undo


def run(opt, script, argv):
    """Records SCRIPT; returns (recorder, exit status, message)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    rec = Recorder(opt)
    rec.script = os.path.abspath(script)
    # Patched on every machine, GPU or none, so that the trace does not
    # depend on the recording machine.
    try:
        rec._native = _patch_native(torch)
    except Exception as e:
        if not torch.cuda.is_available():
            raise RuntimeError("cannot record without a GPU with this "
                               "PyTorch (%s)" % e)
        rec._native = None
    _quiet_meta_failures()
    dev = devices.DEVICES[opt.device]
    major = dev[1]
    _patch_cuda(torch, rec, opt.device)
    rec.device_bytes = (dev[3], devices.CONTEXT_BYTES[opt.device])
    devices.nvidia_smi_standin(opt.device, max(1, opt.world_size),
                               sys.executable)
    rec.oom = bool(getattr(opt, "oom", False))
    aten = torch.ops.aten
    FAKE_KEY = torch._C._TorchDispatchModeKey.FAKE
    kn = rec.known = known.Known(torch, rec.assume, rec)
    watch = rec.watch = known.Watch(rec, "memsim record", getattr(
        opt, "item_repeats", 100000))
    from torch._subclasses.fake_tensor import FakeTensor, \
        unset_fake_temporarily
    from . import dispatch
    d = dispatch.Dispatch(rec, opt, kn, watch)

    from torch._ops import HigherOrderOperator

    # The fake mode makes torch.tensor(data, device="cuda") build its data
    # on the CPU and lift it to a fake tensor (FakeTensorMode.__enter__
    # sets torch._C._set_only_lift_cpu_tensors).  That flag is the
    # thread's own, and the autograd engine's device thread, where a CUDA
    # backward runs, inherits the dispatch modes but not it: there
    # torch.tensor(..., device="cuda") ran CUDA's own empty_strided (a
    # custom Function's backward, a hook, flex_attention's backward).  Set
    # on such a thread at its first op, or at a custom Function's backward
    # (BackwardCFunction.apply), which may make a tensor before any op.
    lift_tls = threading.local()
    set_lift = getattr(torch._C, "_set_only_lift_cpu_tensors", None)

    def lift_cpu_tensors():
        lift_tls.set = True
        if set_lift is not None and lifecycle.autograd_thread():
            set_lift(True)

    import torch.autograd.function as taf
    orig_bw_apply = taf.BackwardCFunction.apply

    def bw_apply(self, *args):
        if not getattr(lift_tls, "set", False):
            lift_cpu_tensors()
        return orig_bw_apply(self, *args)

    taf.BackwardCFunction.apply = bw_apply

    # torch.testing.assert_close (torch.jit.trace's check of its trace
    # against the model, _check_trace's compare_outputs) compares the
    # values of two tensors as allclose does: torch.all of
    # torch.isclose, then its bool.  Of GPU tensors, answered by the
    # host bool's rule (values.host_bool: exact where the values are
    # known, else allclose:true), not by a bool .item()'s assumption
    # (False: the mismatch's report, its ops, and a TracerWarning that a
    # GPU run, its outputs close, does not make).
    from torch.testing import _comparison
    pair = getattr(_comparison, "TensorLikePair", None)
    orig_close = getattr(pair, "_compare_regular_values_close", None)
    if orig_close is not None:
        def values_close(self, actual, expected, *, rtol, atol, equal_nan,
                         identifier=None):
            if actual.device.type == "cuda" and \
                    expected.device.type == "cuda" and \
                    torch._C._get_dispatch_mode(FAKE_KEY) is not None and \
                    values.host_bool(rec, "allclose", actual, expected,
                                     rtol=rtol, atol=atol,
                                     equal_nan=equal_nan):
                return
            return orig_close(self, actual, expected, rtol=rtol, atol=atol,
                              equal_nan=equal_nan, identifier=identifier)

        pair._compare_regular_values_close = values_close

    # A thread of the script's (Ultralytics' plot_images, a @threaded
    # function, copying a GPU batch to the host while the main thread
    # trains on) runs its ops under the same modes as the main thread
    # (lifecycle.patch_threads): one op at a time is recorded, whole,
    # its allocations, kernels' temporaries and frees together, as the
    # GPU's caching allocator serves one request at a time (its mutex);
    # the recorder's state (Dispatch's branch, Known's values) is one for
    # all threads.  Reentrant: an op's own ops (a composite kernel's, a
    # higher-order operator's) come back here in the same thread.
    op_lock = threading.RLock()

    class Track(TorchDispatchMode):
        # An eager call of a higher-order operator (flex_attention and its
        # backward, called without torch.compile) comes here too: it runs
        # PyTorch's own eager implementation, the operator's
        # CompositeExplicitAutograd kernel (flex_attention's sdpa_dense,
        # which materializes the scores), whose ATen ops are then recorded
        # one by one, as a CUDA run executes them (no CUDA kernel of its
        # own exists).  Autograd has been dispatched above this mode (the
        # operator's Autograd kernel).
        supports_higher_order_operators = True

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not getattr(lift_tls, "set", False):
                lift_cpu_tensors()
            if _NestedTensor is not None and _NestedTensor in types:
                # A jagged nested tensor's op: its subclass's own
                # __torch_dispatch__ runs it on its fake values (and
                # offsets), whose ops come back here one by one.
                return NotImplemented
            if args and type(args[0]) in numbers:
                args = wrapped_numbers(func, args)
            if tracing() is not None:
                return traced(self, func, types, args, kwargs)
            if func is aten._convolution.default and len(args) == 13:
                # at::native::_convolution picks the backend and runs it
                # (cuDNN's plan and workspace) as convolution's kernel
                # does through it: a traced module's aten::_convolution
                # (traced below) is recorded as the convolution it is.
                # Its four flags are the global context's at the trace
                # (convolution reads them there, as Dispatch does).
                func, args = aten.convolution.default, args[:9]
            with op_lock, plain_args(args, kwargs):
                if isinstance(func, HigherOrderOperator):
                    return higher_order(self, func, args, kwargs)
                return d.dispatch(self, func, args, kwargs)

    tracing = getattr(torch._C, "_get_tracing_state", lambda: None)

    # Under torch.jit.trace (jittrace.py) an op that TraceType does not
    # record (its generator's DONT_RECORD_TRACE: convolution; one with
    # no tensor output: _local_scalar_dense) comes here with the tracer's
    # state still set, its kernel's ops left to be traced: convolution's
    # CompositeExplicit kernel (at::native::convolution) calls
    # at::_convolution, traced, with the global context's flags.
    def traced(mode, func, types, args, kwargs):
        if func is aten.convolution.default and len(args) == 9 and \
                not kwargs:
            # convolution's kernel's at::_convolution, dispatched from the
            # top as the kernel does: its TraceType kernel adds the node
            # aten::_convolution, clears the state and redispatches to
            # this mode (recorded above as the convolution), then marks
            # the output as the node's
            cudnn = torch.backends.cudnn
            flags = (bool(cudnn.benchmark),
                     bool(cudnn.deterministic or
                          torch.are_deterministic_algorithms_enabled()),
                     bool(cudnn.enabled), bool(cudnn.allow_tf32))
            # (the C++ callable itself: no Python frame of PyTorch's
            # between the program's and the recorder's, whose the
            # tracer's names skip: jittrace.install)
            op = aten._convolution.default
            was = jittrace.dispatch(torch, True)
            try:
                with mode:
                    return getattr(op, "_op", op)(*args, *flags)
            finally:
                jittrace.dispatch(torch, was)
        # A kernel that a CUDA run executes untraced: recorded with the
        # state cleared, as the fake kernels' Python would otherwise read
        # sizes as traced 0-dim tensors (THPSize under tracing) and add
        # aten::size nodes to the graph
        with jittrace.paused(torch):
            return mode.__torch_dispatch__(func, types, args, kwargs)

    # A wrapped number (a Python scalar as a 0-dim tensor: a traced
    # graph's constant, the 1 of BatchNorm's num_batches_tracked.add_)
    # reaches Python as the number itself (toPyObject of a tensor that
    # is_wrapped_number), which the op, called again, takes for no
    # tensor.  The JIT's IR printer (Node::printAttrValue) views such a
    # constant to read its item, torch.jit.trace's check (_check_trace)
    # compares the constants of two traces (isclose: eq of two): an op
    # whose self, and every tensor, is such a number has each made back
    # into its CPU tensor (scalar_to_tensor's dtype).  One with a tensor
    # too (x + 2) runs as it came, the number a scalar.
    numbers = {int: torch.int64, float: torch.float64, bool: torch.bool,
               complex: torch.complex128}

    def wrapped_numbers(func, args):
        schema = getattr(func, "_schema", None)
        if schema is None or not schema.arguments or \
                not isinstance(schema.arguments[0].type, torch._C.TensorType) \
                or any(isinstance(a, torch.Tensor) for a in args):
            return args
        args = list(args)
        with unset_fake_temporarily():
            for i, a in enumerate(schema.arguments[:len(args)]):
                if isinstance(a.type, torch._C.TensorType) and \
                        type(args[i]) in numbers:
                    args[i] = torch.tensor(args[i],
                                           dtype=numbers[type(args[i])])
        return tuple(args)

    def higher_order(mode, func, args, kwargs):
        kernel = func.py_kernels.get(
            torch._C.DispatchKey.CompositeExplicitAutograd)
        if kernel is None:
            raise RuntimeError(
                "the higher-order operator %s has no eager implementation "
                "(CompositeExplicitAutograd kernel) to record" % func.name())
        with mode:
            return kernel(*args, **(kwargs or {}))

    # FSDP frees and reallocates its unsharded parameters by resizing
    # their storage (_free_storage / _alloc_storage in FSDP1, free_storage
    # / alloc_storage in FSDP2: untyped_storage().resize_(0) and back to
    # the full size), which no op's output shows: resize_(0) of a CUDA
    # storage frees its block, resize_(n) allocates a new one.
    orig_resize = torch.UntypedStorage.resize_

    def storage_resize_(self, size):
        out = orig_resize(self, size)
        # A fake tensor's storage is a meta storage: it is a CUDA one when
        # it was seen as a CUDA tensor's.
        r = d.refs.get(id(self))
        if r is not None and r() is self:
            d.note(self, "resize_")
        return out

    torch.UntypedStorage.resize_ = storage_resize_

    # Modules: names, the stack for sites, parameters relabelled.
    from torch.nn.modules import module as nnm

    def pre(mod, inp):
        if not rec.module_stack and id(mod) not in rec.module_names:
            for n, sub in mod.named_modules():
                rec.module_names.setdefault(
                    id(sub), (type(mod).__name__ + ("." + n if n else "")))
            # The whole model's parameters, before any hook of the
            # model's own runs: FSDP2's root unit gathers its parameters
            # in its pre-forward hook and registers the unsharded ones
            # (so a submodule's first forward sees those), and pads the
            # shards that to_empty made after Module._apply (a new
            # block, FSDPParam.reset_sharded_param); here they are still
            # the sharded DTensors, each over its padded local shard.
            for pn, p in mod.named_parameters():
                rec.relabel(p, "parameter",
                            clean(type(mod).__name__ + "." + pn))
        if id(mod) not in rec.seen_modules:
            rec.seen_modules.add(id(mod))
            site = rec.module_names.get(id(mod), type(mod).__name__)
            for pn, p in mod.named_parameters(recurse=False):
                rec.relabel(p, "parameter", clean(site + "." + pn))
        rec.module_stack.append(mod)

    def post(mod, inp, out):
        if rec.module_stack and rec.module_stack[-1] is mod:
            rec.module_stack.pop()

    h1 = nnm.register_module_forward_pre_hook(pre)
    h2 = nnm.register_module_forward_hook(post, always_call=True)
    orig_apply = torch.nn.Module._apply
    moved = {}

    def _set_moved(p, pa):
        """p.data = pa, p keeping what is known of pa's values."""
        v = kn.value(pa)
        r = kn.values.real(pa) if kn.values is not None else None
        p.data = pa
        if v is not known.UNKNOWN:
            kn._set(p, v)
        if r is not None:
            kn.values._set(p, r)

    def _param_of(t, requires_grad):
        """A Parameter of T: a plain host Parameter for a real CPU
        tensor (not param_new's fake one: a model moved to the host is
        the host's, and ops on it run for real there)."""
        if isinstance(t, FakeTensor) or t.device.type != "cpu":
            return torch.nn.Parameter(t, requires_grad=requires_grad)
        return torch.Tensor._make_subclass(torch.nn.Parameter, t,
                                           requires_grad)

    def _forget(t):
        """T out of the weak tables that the recorder and its fake mode
        keep of tensors (the values known of it, the converter's memo
        of a real tensor and of the fake made from one), whose weak
        references keep swap_tensors from swapping it."""
        for table in (kn.vals, getattr(kn.values, "shadow", None),
                      getattr(kn.values, "ranges", None)):
            if table is not None:
                table.pop(t, None)
        mc = fm.fake_tensor_converter.meta_converter
        tid = mc.describer.lookup_tensor.pop(t, None)
        if tid is not None:
            mc.tensor_memo.pop(tid, None)
        for k, v in list(mc.tensor_memo.items()):
            if v is t:
                del mc.tensor_memo[k]

    def _become(p, newp, pa):
        """Makes the parameter P hold NEWP's tensor (its data, grad and
        type: a plain host Parameter after model.cpu(), a fake CUDA one
        after .cuda() again), P keeping its identity, as Module._apply
        keeps it for a move between devices (param.data = ..., the
        grad's .data too), so that the optimizer made before steps it and
        its old device memory goes with the old tensor.  What is known
        of PA's values goes on with it.  False where swap_tensors
        refuses (other references to P's tensor: an autograd graph)."""
        v = kn.value(pa)
        r = kn.values.real(pa) if kn.values is not None else None
        _forget(p)
        _forget(newp)
        try:
            torch.utils.swap_tensors(p, newp)
        except RuntimeError:
            return False
        if v is not known.UNKNOWN:
            kn._set(p, v)
        if r is not None and r is not pa:
            kn.values._set(p, r)
        return True

    depth = [0]

    def _apply(self, fn, recurse=True):
        depth[0] += 1
        try:
            return _apply1(self, fn, recurse)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                moved.clear()

    def _apply1(self, fn, recurse=True):
        """Module._apply for fake parameters: nn.Module swaps a FakeTensor
        parameter in place (torch.utils.swap_tensors), which the fake mode's
        own weak references forbid.  Here, as Module._apply does for plain
        tensors (compute_should_use_set_data: a move between devices, a
        cast), the parameter stays the same object and its .data (and its
        grad's) is swapped, so that an optimizer made before the move
        (Fabric's setup, `model.to()` after the optimizer) steps the moved
        parameters; shared parameters move once."""
        if recurse:
            for m in self.children():
                m._apply(fn)
        for key, p in list(self._parameters.items()):
            if p is None:
                continue
            if id(p) in moved:
                self._parameters[key] = moved[id(p)]
                continue
            with torch.no_grad():
                pa = fn(p)
            if pa is p:
                continue
            if isinstance(p, FakeTensor) == isinstance(pa, FakeTensor) \
                    and torch._has_compatible_shallow_copy_type(p, pa):
                moved[id(p)] = p
                _set_moved(p, pa)
                if p.grad is not None:
                    with torch.no_grad():
                        _set_moved(p.grad, fn(p.grad))
            else:
                # to or from a real host tensor (model.cpu(), the model
                # back to the GPU) or to meta: set_data cannot cross
                # tensor types, so the parameter takes the moved tensor's
                # place (_become), as swap_tensors does; where that is
                # refused, a new Parameter takes its place in the module.
                newp = _param_of(pa, p.requires_grad)
                if p.grad is not None:
                    with torch.no_grad():
                        g = fn(p.grad)
                    if isinstance(g, FakeTensor) == \
                            isinstance(newp, FakeTensor):
                        newp.grad = g
                if _become(p, newp, pa):
                    moved[id(p)] = p
                else:
                    moved[id(p)] = newp
                    self._parameters[key] = p = newp
            rec.relabel(p, "parameter",
                        clean(type(self).__name__ + "." + key))
        for key, b in list(self._buffers.items()):
            if b is not None:
                self._buffers[key] = b = fn(b)
                # a buffer moved with its module is the module's state,
                # as the parameters: "parameter" (memsim explain reads a
                # real snapshot's blocks under Module._apply so, buffers
                # included), not "input" at the caller's .to()
                rec.relabel(b, "parameter",
                            clean(type(self).__name__ + "." + key))
        return self

    torch.nn.Module._apply = _apply

    import torch.optim.optimizer as oo

    def opt_pre(o, a, k):
        rec.phase_optimizer += 1
        # profile_hook_step passes the step's arguments, self first
        closure = k.get("closure", a[1] if len(a) > 1 else None) \
            if isinstance(k, dict) else None
        ph = ["o", 0]
        rec.phases.append(ph)
        if not callable(closure):
            return None
        # Optimizer.step calls the closure (Adam: `with
        # torch.enable_grad(): loss = closure()`); a pre-hook may return
        # the step's (args, kwargs) (Optimizer.profile_hook_step), so the
        # step gets the closure wrapped, each call counted in the phase

        def counted(*ca, **ck):
            ph[1] += 1
            try:
                return closure(*ca, **ck)
            finally:
                ph[1] -= 1

        if "closure" in k:
            k = dict(k)
            k["closure"] = counted
        else:
            a = (a[0], counted) + tuple(a[2:])
        return a, k

    def opt_post(o, a, k):
        rec.phase_optimizer -= 1
        if not rec.phase_optimizer and getattr(rec, "watch", None):
            rec.watch.step_done()
        if rec.phases and rec.phases[-1][0] == "o":
            rec.phases.pop()

    hp = oo.register_optimizer_step_pre_hook(opt_pre)
    hq = oo.register_optimizer_step_post_hook(opt_post)
    orig_backward = torch.autograd.backward

    def backward(*a, **k):
        rec.phase_backward += 1
        rec.phases.append(("b",))
        try:
            return orig_backward(*a, **k)
        finally:
            rec.phase_backward -= 1
            rec.phases.pop()

    torch.autograd.backward = backward
    # scaled_dot_product_attention picks its kernel through a DispatchStub
    # that only a CUDA build with a GPU has (sdp_utils' select_sdp_backend
    # reads the device's properties); without it the math path would be
    # recorded.  The kernel the named device would run is called instead.
    F = torch.nn.functional
    orig_sdpa = F.scaled_dot_product_attention


    def math_sdpa(query, key, value, attn_mask=None, is_causal=False,
                  **kw):
        """The math path (_scaled_dot_product_attention_math) adds the
        mask to the attention weights in place, except for tensor
        subclasses (areAnyTensorSubclassLike), the fake ones included:
        the fake run would make one more weights-sized tensor.  The add
        is done in place here, as on the GPU (rec.math_add)."""
        if query.device.type != "cuda" or \
                (attn_mask is None and not is_causal):
            return orig_sdpa(query, key, value, attn_mask=attn_mask,
                             is_causal=is_causal, **kw)
        rec.math_add = True
        try:
            return orig_sdpa(query, key, value, attn_mask=attn_mask,
                             is_causal=is_causal, **kw)
        finally:
            rec.math_add = False

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0,
             is_causal=False, scale=None, enable_gqa=False):
        args = (query, key, value, attn_mask, dropout_p, is_causal)
        kw = {"scale": scale, "enable_gqa": enable_gqa}
        if jittrace.state(torch) is None:
            return sdpa_(*args, **kw)
        # under torch.jit.trace: the node a CUDA run's graph has
        return jittrace.call(
            torch, aten.scaled_dot_product_attention.default, args, kw,
            lambda: sdpa_(*args, **kw))

    def sdpa_(query, key, value, attn_mask=None, dropout_p=0.0,
              is_causal=False, scale=None, enable_gqa=False):
        if _NestedTensor is not None and any(
                isinstance(t, _NestedTensor) for t in (query, key, value)):
            # jagged nested tensors: PyTorch's own
            # (jagged_scaled_dot_product_attention, through the subclass's
            # __torch_function__), whose kernels' ops come back here
            return orig_sdpa(query, key, value, attn_mask=attn_mask,
                             dropout_p=dropout_p, is_causal=is_causal,
                             scale=scale, enable_gqa=enable_gqa)
        # Grouped-query attention (enable_gqa: fewer key/value heads, a
        # divisor of the query's): cuDNN and flash attention take the
        # grouped heads as they are (the H200 ran cuDNN attention for a
        # Llama with 8 query and 2 key/value heads, bf16: its output and
        # 256-byte workspace, no repeated keys); others fall back.
        gqa = query.dim() == 4 and key.dim() == 4 and \
            query.shape[1] != key.shape[1]
        if query.device.type != "cuda" or query.dim() != 4 or \
                key.shape[1] != value.shape[1] or \
                (gqa and not (enable_gqa and
                              query.shape[1] % key.shape[1] == 0)):
            return math_sdpa(query, key, value, attn_mask=attn_mask,
                             dropout_p=dropout_p, is_causal=is_causal,
                             scale=scale, enable_gqa=enable_gqa)
        if torch.is_autocast_enabled("cuda"):
            # autocast's lower_precision_fp policy casts every floating
            # argument, the additive attn_mask included, last argument
            # first: WrapFunction_'s cached_cast(...) calls are the
            # arguments of one call, which the CUDA build evaluates right
            # to left (under autocast linear casts its weight before its
            # input; the H200 trace of Qwen3-MoE's fp32 queries, keys and
            # values: 512 KiB, 512 KiB, then the 1 MiB query).
            dt = torch.get_autocast_dtype("cuda")
            if attn_mask is not None and attn_mask.is_floating_point():
                attn_mask = attn_mask.to(dt)
            value, key, query = (t.to(dt) for t in (value, key, query))
        choice = _sdp_choice(torch, rec, (query, key, value, attn_mask), {},
                             major)
        if gqa and choice not in (SDP_CUDNN, SDP_FLASH):
            return math_sdpa(query, key, value, attn_mask=attn_mask,
                             dropout_p=dropout_p, is_causal=is_causal,
                             scale=scale, enable_gqa=enable_gqa)
        grad = torch.is_grad_enabled() and any(
            t.requires_grad for t in (query, key, value))
        if attn_mask is not None and attn_mask.requires_grad:
            # A mask that needs its gradient (T5's learned position bias):
            # the H200 ran the math path (its fp32 softmax weights are in
            # the real T5 trace wherever the mask requires grad, and only
            # there).
            choice = SDP_MATH
        elif attn_mask is not None and attn_mask.dtype == torch.bool and \
                choice != SDP_MATH:
            # convert_boolean_attn_mask: the fused kernels add the mask,
            # a boolean one made additive as at::where(mask, 0.0,
            # at::scalar_tensor(-inf)) makes it: the -inf scalar, then
            # where's 0.0 scalar on the same device, then the output at
            # the mask's broadcast size in the query's dtype.
            attn_mask = torch.where(
                attn_mask, 0.0,
                torch.scalar_tensor(float("-inf"), dtype=query.dtype,
                                    device=attn_mask.device))
        if choice == SDP_CUDNN:
            return aten._scaled_dot_product_cudnn_attention(
                query, key, value, attn_mask, grad, dropout_p, is_causal,
                False, scale=scale)[0]
        if choice == SDP_FLASH and attn_mask is None:
            # check_head_dim_size_flash takes any head dimension up to
            # 256: scaled_dot_product_attention pads query, key and value
            # to a multiple of 8 (pad_last_dim<8, false>: three copies,
            # kept for backward), scales by the first one's dimension and
            # slices the padded output back (post_process_flash_output).
            d = query.shape[-1]
            if d % 8:
                if scale is None:
                    scale = 1.0 / math.sqrt(d)
                query, key, value = (torch.nn.functional.pad(t, (0, -d % 8))
                                     for t in (query, key, value))
            out = aten._scaled_dot_product_flash_attention(
                query, key, value, dropout_p, is_causal, False,
                scale=scale)[0]
            return out[..., :d] if d % 8 else out
        if choice in (SDP_EFFICIENT, SDP_FLASH):
            # flash takes no mask (check_for_attn_mask): memory-efficient
            # attention is next in select_sdp_backend()'s order.
            if attn_mask is not None:
                attn_mask = _preprocess_mask(rec, attn_mask, query, key)
            return aten._scaled_dot_product_efficient_attention(
                query, key, value, attn_mask, grad, dropout_p, is_causal,
                scale=scale)[0]
        return math_sdpa(query, key, value, attn_mask=attn_mask,
                         dropout_p=dropout_p, is_causal=is_causal,
                         scale=scale)

    F.scaled_dot_product_attention = sdpa
    _patch_jagged_sdpa(torch, major)
    _sdp_flags(torch)   # made here, outside any function Dynamo traces

    # at::linear on an input neither 2-D nor contiguous with a bias:
    # matmul, then output.add_(bias), out of place only for tensor
    # subclasses (isTensorSubclassLike), the fake ones included; in place
    # here, as on the GPU (functional.py's own calls, nn.MultiheadAttention's
    # in-projection, look F.linear up too).
    orig_linear = F.linear
    # Under torch.compile Dynamo traces these replacements as the program's
    # own code: each hands the call to PyTorch's function there (the graph
    # gets the op as a real run's does; compiled.py gives its buffers),
    # else Dynamo meets the recorder's internals (an autograd.Function
    # entering fake modes) and runs the whole frame eagerly.
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                        lambda: False)

    def linear(input, weight, bias=None):
        if bias is None or compiling() or \
                not isinstance(input, torch.Tensor) or \
                input.device.type != "cuda" or input.dim() == 2 or \
                input.is_contiguous():
            return orig_linear(input, weight, bias)
        rec.math_add = True
        try:
            return orig_linear(input, weight, bias)
        finally:
            rec.math_add = False

    F.linear = linear
    # the tracer's names read from the program's frames (jittrace.py)
    undo_names = jittrace.install(torch)

    # rms_norm: CUDA builds run one fused kernel (_fused_rms_norm: the
    # output and a float32 rstd per row, saved for _fused_rms_norm_backward,
    # which returns grad_input and grad_weight); without CUDA kernels it
    # decomposes into several temporaries.  The fused kernel's tensors are
    # made here for CUDA inputs.
    orig_rms = F.rms_norm

    class _FusedRMSNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, shape, eps):
            n = len(shape)
            dt = x.dtype if weight is None else \
                torch.result_type(x, weight)
            out = torch.empty(x.shape, dtype=dt, device=x.device)
            rstd = torch.empty(tuple(x.shape[:-n]) + (1,) * n,
                               dtype=torch.float32, device=x.device)
            ctx.save_for_backward(x, weight, rstd)
            values.rms_norm_fwd(rec, x, weight, shape, eps, out, rstd)
            return out

        @staticmethod
        def backward(ctx, grad):
            x, weight, rstd = ctx.saved_tensors
            gx = torch.empty_like(x)
            gw = torch.empty_like(weight) if weight is not None and \
                ctx.needs_input_grad[1] else None
            values.rms_norm_bwd(rec, grad, x, weight, rstd, gx, gw)
            return gx, gw, None, None

    def rms_norm(input, normalized_shape, weight=None, eps=None):
        if input.device.type != "cuda" or compiling():
            return orig_rms(input, normalized_shape, weight, eps)
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        # (under torch.jit.trace: the node aten::rms_norm)
        return jittrace.call(
            torch, aten.rms_norm.default, (input, list(shape), weight, eps),
            {}, lambda: _FusedRMSNorm.apply(input, weight, shape, eps))

    F.rms_norm = rms_norm
    # ctc_loss with lengths as tensors (LossCTC.cpp): plain tensors take
    # its fast path, which reads the lengths on the host and calls the
    # int-list overload; a fake log_probs is a tensor subclass and takes
    # the composite path, which hands host lengths to the GPU kernel
    # beside GPU log-probs, a device error the GPU never raises.  The
    # lengths go as the fast path reads them (a GPU tensor's by the host
    # rules, docs/recording-values.md).
    orig_ctc = torch.ctc_loss

    def ctc_loss(log_probs, targets, input_lengths, target_lengths, *a,
                 **k):
        if not compiling() and isinstance(log_probs, FakeTensor) and all(
                isinstance(t, torch.Tensor) and not t.is_floating_point()
                and not t.is_complex() and t.dtype != torch.bool
                for t in (input_lengths, target_lengths)):
            input_lengths, target_lengths = (
                [int(v) for v in t.to("cpu", torch.long).reshape(-1)
                 .tolist()] for t in (input_lengths, target_lengths))
        return orig_ctc(log_probs, targets, input_lengths, target_lengths,
                        *a, **k)

    torch.ctc_loss = ctc_loss
    # torch.einsum of three operands or more contracts them in the order
    # opt_einsum's contract_path gives where the opt_einsum package is
    # installed: where it is not, einsumpath stands in for it (its
    # docstring says why), an assumption a call on the GPU
    def einsum_note(operands, kind):
        if not compiling() and any(
                isinstance(t, torch.Tensor) and t.device.type == "cuda"
                for t in operands):
            values.assume(rec, kind, len(operands))

    undo_einsum = einsumpath.install(torch, einsum_note)
    _jit_builtins(torch, {"sdpa": sdpa, "linear": linear,
                          "rms_norm": rms_norm}, backward)
    # nn.LSTM/GRU/RNN: cuDNN's tensors (rnn.py).
    from . import rnn
    undo_rnn = rnn.install(torch, rec, devices.DEVICES[opt.device][4])
    # CUDA graphs and MemPools by hand (graphs.py)
    from . import graphs
    undo_graphs = graphs.install(torch, rec, kn)
    from . import strategy
    strategy.apply(torch, opt)
    from . import dist
    # --world-size given (torchrun of one process included, which sets
    # RANK, LOCAL_RANK and WORLD_SIZE for its worker): the rank's
    # environment and the fake process group from the start
    if opt.world_size > 1 or opt.world_size_given:
        dist.install(torch, opt, rec)
    else:
        dist.install_single(torch, opt, rec)

    status, msg = 0, None
    sys.argv = [script] + list(argv)
    # The host side (host.py): the script's file writes to a scratch
    # folder, torch.save of fake tensors, DataLoader workers without the
    # recorder, 0-dim GPU tensors formatted as their .item(), .numpy() and
    # .tolist() of a fake tensor by the host rules.
    files = rec.files = host.Files()
    # transformers (5.x) copies a checkpoint's tensors to the GPU from a
    # thread pool (core_model_loading's spawn_materialize): threads of a
    # library, which run without the fake mode (lifecycle.patch_threads:
    # one FakeTensorMode is not safe in two threads at once).  Its own
    # switch makes it copy them one after another in the calling thread:
    # the same copies, in the order of the checkpoint.
    os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")
    undo_save = host.patch_save(torch, files, rec)
    undo_workers = host.patch_workers(torch)
    undo_data_ptr = host.patch_data_ptr(torch, rec)
    undo_share = host.patch_share_memory(torch, rec)
    undo_from_buffer = host.patch_from_buffer(torch)
    undo_trunc_normal = host.patch_trunc_normal(torch, d)
    undo_send = host.patch_process_send(torch)
    undo_safetensors = host.patch_safetensors(files)
    undo_jit_save = host.patch_jit_save(torch, files)
    undo_cv2 = host.on_import("cv2", lambda mod: host.patch_cv2(mod, files))
    # The program's own Triton kernels (userkernels.py), once it imports
    # Triton.
    from . import userkernels
    undo_triton = host.on_import(
        "triton", lambda mod: userkernels.patch(rec, mod))
    # torch.utils.cpp_extension.CUDA_HOME of a CUDA build
    undo_cuda_home = host.patch_cuda_home()
    orig_format = torch.Tensor.__format__
    orig_numpy = torch.Tensor.numpy

    def __format__(self, spec):
        if isinstance(self, FakeTensor) and self.dim() == 0:
            return self.item().__format__(spec)
        return orig_format(self, spec)

    def numpy(self, *a, **k):
        if isinstance(self, FakeTensor):
            vals = _host_values(rec, self.detach(), large=True)
            if vals is not None:
                return vals.numpy(*a, **k)
        return orig_numpy(self, *a, **k)

    orig_tolist = FakeTensor.tolist   # an .item() per element

    def tolist(self):
        # one host tensor (one assumption), not an .item() per element;
        # a list needs real memory, as .numpy()'s array does
        if self.dim() > 0:
            vals = _host_values(rec, self.detach(), large=True)
            if vals is not None:
                return vals.tolist()
        return orig_tolist(self)

    # type(param)(data, requires_grad=...) of a fake parameter (accelerate's
    # set_module_tensor_to_device: diffusers' and transformers' loading of
    # a model made on the meta device): a parameter is a FakeTensor marked
    # _is_param (Parameter.__new__ of a tensor subclass), whose class
    # the program calls as it would call Parameter; the fake mode's own
    # calls name the mode first.
    orig_new = FakeTensor.__new__

    def fake_new(cls, *args, **kwargs):
        if cls is FakeTensor and "fake_mode" not in kwargs and \
                not (args and isinstance(args[0], FakeTensorMode)):
            return torch.nn.Parameter(*args, **kwargs)
        return orig_new(cls, *args, **kwargs)

    torch.Tensor.__format__ = __format__
    torch.Tensor.numpy = numpy
    FakeTensor.tolist = tolist
    FakeTensor.__new__ = staticmethod(fake_new)
    files.install()
    # Constants (torch.tensor(...) data) stay on the CPU: no CUDA kernel
    # runs (a property in some versions of PyTorch, an attribute in others).
    meta_kernel = {}

    class _Mode(FakeTensorMode):
        avoid_device_init = True

        # FakeTensorMode keeps two things of the thread that uses it on
        # the mode, one for all threads; a script's second thread
        # (Ultralytics' @threaded plot_images) broke the first's.  Per
        # thread here, as the thread-local state they go with:
        # in_kernel_invocation, whether the thread runs a fake kernel
        # (in_kernel_invocation_manager sets it with the thread's own Meta
        # key and asserts the two agree; a FakeTensor's .device is "meta"
        # while it is set): a second thread's op, or its tensor's .device,
        # while the first ran a kernel, raised "AssertionError: False,
        # True" or read "meta".  enter_stack, what each __enter__ found
        # (the thread's dispatch mode, its only-lift-CPU-tensors flag) for
        # its __exit__ to put back: a thread's exit (lifecycle.
        # patch_threads) popped the main thread's entry of a nested
        # `with fake_mode` (FakeTensor.__torch_dispatch__), whose exit
        # then cleared the main thread's flag, and its next
        # torch.tensor(..., device="cuda") ran CUDA's own ("Found no
        # NVIDIA driver").
        def __init__(self, *args, **kwargs):
            self._thread = threading.local()
            super().__init__(*args, **kwargs)

        @property
        def in_kernel_invocation(self):
            return getattr(self._thread, "in_kernel", False)

        @in_kernel_invocation.setter
        def in_kernel_invocation(self, v):
            self._thread.in_kernel = v

        @property
        def enter_stack(self):
            s = getattr(self._thread, "enter_stack", None)
            if s is None:
                s = self._thread.enter_stack = []
            return s

        @enter_stack.setter
        def enter_stack(self, v):
            self._thread.enter_stack = v

        def cpp_meta_supports_symint(self, func):
            # An op with a C++ meta kernel runs it, as a CUDA build runs
            # the op's one CUDA kernel, rather than a Python decomposition
            # into several ops (silu_backward would allocate six tensors
            # instead of one).  Shapes here are never symbolic.
            # (asked once an op: the fake mode asks at every call)
            # Under --symbolic, PyTorch's own answer: a C++ meta kernel
            # of concrete sizes refuses a SymInt (symbolic.py).
            if self.shape_env is not None:
                return super().cpp_meta_supports_symint(func)
            v = meta_kernel.get(func)
            if v is None:
                v = meta_kernel[func] = \
                    torch._C._dispatch_has_kernel_for_dispatch_key(
                        func.name(), "Meta") or \
                    super().cpp_meta_supports_symint(func)
            return v

    # The dispatch cache's keys and hits made faster (cachekey.py), where
    # this PyTorch's are the ones it knows.
    from . import cachekey
    cachekey.install(torch, _Mode, FakeTensorMode)
    undo_fake_queries = host.patch_fake_queries(_Mode)
    undo_hop_rules = share_hop_rules(torch, _Mode, FakeTensorMode)

    # An op with no fake (meta) kernel: the fake mode would run the
    # device's real kernel on zeros (run_fallback_kernel), which for a
    # CUDA tensor initializes CUDA.  Refused, naming the operator; CPU
    # fake tensors (host.HOST_FAKE_BYTES) keep the fallback.
    import torch._subclasses.fake_tensor as ftm
    orig_fallback = ftm.run_fallback_kernel

    def run_fallback_kernel(fake_mode, func, flat_args, args_spec, err):
        if any(isinstance(a, FakeTensor) and a.fake_device.type != "cpu"
               for a in flat_args):
            if not func._schema.returns:
                # Only mutates its arguments (a fused optimizer step,
                # _fused_adagrad_): no output; its temporaries, if any,
                # are not known.
                return None
            raise no_fake(func)
        return orig_fallback(fake_mode, func, flat_args, args_spec, err)

    ftm.run_fallback_kernel = run_fallback_kernel
    view_errors_as_aten(torch)
    plain_args = metadata_subclasses(torch, ftm, FakeTensor, _become)
    if getattr(opt, "symbolic", None):
        # one recording for a family of sizes (symbolic.py)
        from . import symbolic
        rec.sym = d.sym = symbolic.Symbolic(torch, *opt.symbolic)
        fm = _Mode(allow_non_fake_inputs=True, static_shapes=True,
                   shape_env=rec.sym.shape_env)
        d.fm = fm
    else:
        fm = _Mode(allow_non_fake_inputs=True)
    try:
        fm.avoid_device_init = True
    except AttributeError:
        pass
    # A model's parameters are fake, made on the CPU or not (host.py):
    # nn.Parameter of a real CPU tensor takes a fake one of its shape, so
    # that moving it later (`param.data = param.to(device)`, FSDP) swaps
    # fake for fake; a parameter whose elements are all one value keeps
    # that value known (a LayerNorm's ones).  Not one computed on the
    # host from parameters that require grad (a model moved to the host:
    # Module._apply above; torch.ao's convert fuses a batch norm into
    # the conv's weight, fuse_conv_bn_weights, and quantizes it): that
    # is the host's own work, real as the model it comes from.
    orig_param_new = torch.nn.Parameter.__new__

    host_copy = threading.local()
    orig_param_deepcopy = torch.nn.Parameter.__deepcopy__

    def param_deepcopy(self, memo):
        """copy.deepcopy of a real host Parameter (convert's copy of a
        model moved to the host) is real too: Parameter.__deepcopy__
        makes the copy with nn.Parameter of a clone of its data."""
        if isinstance(self, FakeTensor):
            return orig_param_deepcopy(self, memo)
        was = getattr(host_copy, "on", False)
        host_copy.on = True
        try:
            return orig_param_deepcopy(self, memo)
        finally:
            host_copy.on = was

    torch.nn.Parameter.__deepcopy__ = param_deepcopy

    def param_new(cls, data=None, requires_grad=True):
        if getattr(host_copy, "on", False):
            return orig_param_new(cls, data, requires_grad)
        if data is not None and type(data) is torch.Tensor and \
                data.device.type == "cpu" and not data.requires_grad and \
                torch._C._get_dispatch_mode(FAKE_KEY) is fm:
            real = data
            with unset_fake_temporarily():
                flat = real.reshape(-1)
                v = flat[0].item() if flat.numel() and \
                    not real.dtype.is_complex and \
                    bool((flat == flat[0]).all()) else None
            data = fm.from_tensor(real)
            if v is not None:
                kn._set(data, v)
            vs = getattr(kn, "values", None)
            if vs is not None and vs.cpu:
                # --values cpu: the parameter's values go on with it (its
                # init's in-place ops are computed on them: values.py).
                with unset_fake_temporarily():
                    vs._set(data, real.detach().clone())
        return orig_param_new(cls, data, requires_grad)

    torch.nn.Parameter.__new__ = param_new
    # the recorder's modes, entered again where PyTorch runs a program's
    # own code with them set aside (compiled.py: an optimizer's
    # _init_group while Dynamo traces its step)
    rec.script_modes = lambda: (fm, Track())
    undo_threads = lifecycle.patch_threads(rec.script_modes,
                                           _CURRENT_STREAM)
    had_deepcopy = FakeTensor.__dict__.get("__deepcopy__")
    FakeTensor.__deepcopy__ = _fake_deepcopy
    undo_dynamo = lifecycle.collect_at_dynamo_import(
        lambda: torch._C._get_dispatch_mode(FAKE_KEY) is fm)
    try:
        with fm, Track():
            lifecycle.run_main(opt, script)
        if undo_threads.failed:
            status, msg = 1, "%s: %s" % (script, undo_threads.failed[0])
    except SystemExit as e:
        if e.code is None or e.code == 0:
            status = 0
        elif isinstance(e.code, int):
            status, msg = e.code, "%s %s with status %d" % (
                script, "called os._exit" if isinstance(
                    e, lifecycle.OsExit) else "exited", e.code)
        else:
            status, msg = 1, "%s exited: %s" % (script, e.code)
    except known.Endless as e:
        status, msg = 1, str(e)
    except BaseException as e:
        status, msg = 1, "%s raised %s: %s\n%s" % (
            script, type(e).__name__, e, host.user_traceback(e, script))
    finally:
        undo_dynamo()
        undo_threads()
        rec.script_modes = None
        ftm.run_fallback_kernel = orig_fallback
        torch.nn.Parameter.__new__ = orig_param_new
        torch.nn.Parameter.__deepcopy__ = orig_param_deepcopy
        if had_deepcopy is None:
            del FakeTensor.__deepcopy__
        else:
            FakeTensor.__deepcopy__ = had_deepcopy
        files.uninstall()
        if files.count:
            print("memsim record: %s wrote %d file%s; each went to a "
                  "scratch folder, removed (docs/recording-boundary.md)" % (
                      script, files.count, "" if files.count == 1 else "s"),
                  file=sys.stderr)
        files.remove()
        undo_save()
        undo_workers()
        undo_data_ptr()
        undo_share()
        undo_from_buffer()
        undo_trunc_normal()
        undo_send()
        undo_safetensors()
        undo_jit_save()
        undo_cv2()
        undo_triton()
        undo_cuda_home()
        undo_fake_queries()
        undo_hop_rules()
        torch.Tensor.__format__ = orig_format
        torch.Tensor.numpy = orig_numpy
        FakeTensor.tolist = orig_tolist
        FakeTensor.__new__ = staticmethod(orig_new)
        h1.remove()
        h2.remove()
        hp.remove()
        hq.remove()
        torch.autograd.backward = orig_backward
        taf.BackwardCFunction.apply = orig_bw_apply
        torch.nn.Module._apply = orig_apply
        torch.UntypedStorage.resize_ = orig_resize
        F.scaled_dot_product_attention = orig_sdpa
        F.linear = orig_linear
        F.rms_norm = orig_rms
        torch.ctc_loss = orig_ctc
        if undo_einsum is not None:
            undo_einsum()
        undo_rnn()
        undo_graphs()
        undo_names()
        if orig_close is not None:
            pair._compare_regular_values_close = orig_close
    return rec, status, msg
