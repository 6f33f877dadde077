"""--fake: each op dispatched under the fake mode, and what it allocates.

fake.run() installs a TorchDispatchMode (Track) above the fake mode whose
every call goes to Dispatch.dispatch: host ops run for real (host.py),
values that cross to the host are answered (known.py, values.py), the op
runs on fake tensors, and each CUDA storage not seen before becomes an
alloc row (Recorder.alloc), its death a free (a weak reference on the
storage's Python object).  The kernels' own temporaries and workspaces,
which fake tensors do not show, are added by rule (kernels.py): see
fake.py's docstring for the rules and docs/recording-values.md for the
values.

Dispatch is the state of one recording's dispatch (the recorder, the
values known, the storages seen); the facts about an op that do not
change between calls (its name, whether it has a kernel of its own) are
asked once an op (op_info).
"""
import contextlib
import math
import functools
import os
import sys
import threading
import weakref

import torch
import torch._subclasses.fake_tensor as ftm
from torch._prims_common import is_non_overlapping_and_dense_or_false
from torch._prims_common import \
    make_contiguous_strides_for as contiguous_strides
from torch._subclasses.fake_impls import _compute_stride as view_strides
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
from torch.utils._python_dispatch import is_traceable_wrapper_subclass
from torch.utils._pytree import tree_flatten, tree_unflatten

from . import attention
from . import devices
from . import host
from . import kernels
from . import known
from . import lifecycle
from . import overflow
from . import samedevice
from . import sparse
from . import values
from .fake import KERNEL_SITES, SDPA_KERNELS, _dynamic, _host_values, \
    _item_value, _may_be_dynamic, no_fake, unique_flags

FAKE_KEY = torch._C._TorchDispatchModeKey.FAKE
_aten = torch.ops.aten
_IS_PINNED = _aten.is_pinned.default
_PIN_MEMORY = _aten._pin_memory.default
_COPY_ = _aten.copy_.default
_PRIM_DEVICE = torch.ops.prim.device.default
_ADD_TENSOR = _aten.add.Tensor
_UNSAFE_VIEW = _aten._unsafe_view.default
_VIEW = _aten.view.default
# The draws whose fake kernels are torch._refs' decompositions (cauchy,
# exponential, geometric, log_normal and their in-place forms): each
# raises "generator is not supported in refs" when the program passes a
# generator= (VAR's gumbel_softmax_with_rng).  The GPU's kernel
# (Distributions.cpp's templates::*_impl_) fills self in place, whichever
# generator it draws from: the fake call is made without it (kn.after
# still gets it: --values cpu draws from the program's generator).
_REF_DRAWS = frozenset(
    getattr(getattr(_aten, _n), _o)
    for _n in ("cauchy", "cauchy_", "exponential", "exponential_",
               "geometric", "geometric_", "log_normal", "log_normal_")
    if hasattr(_aten, _n)
    for _o in getattr(_aten, _n).overloads())
# The ops that take a Storage: FakeTensorMode's dispatch cache would keep
# it in its key (_prep_args_for_hash), and with it the storage, which a
# GPU frees once no tensor views it (cuDNN's flat weights flattened
# again: the old buffer lived to the end).
_STORAGE_SET = frozenset(
    getattr(_aten.set_, o) for o in
    ("source_Storage", "source_Storage_storage_offset")
    if hasattr(_aten.set_, o))
_META = torch.device("meta")
# The BLAS calls whose first on a thread makes its cuBLAS workspace.
BLAS_OPS = frozenset((
    "mm", "addmm", "bmm", "baddbmm", "matmul", "addmv", "mv", "dot",
    "_scaled_mm", "linear", "addbmm", "_addmm_activation",
    # (cuBLAS's trsm: lstsq's looped path, Dispatch._gels_looped)
    "triangular_solve", "linalg_solve_triangular"))
_HERE = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def _fold_linear(mode, args, kwargs):
    """at::linear under torch.inference_mode of an input of three or
    more dimensions that is not the contiguous 3-d one its fused addmm
    takes: at::matmul(input, weight.t()), whose should_fold folds the
    input into rows (a reshape: a copy where its leading dimensions do
    not merge) because weight.t() requires grad.  Run below autograd, the
    composite kernel's weight.t() is a fake tensor that does not
    (Aurora's inference roll-out: no copy, a bmm over a broadcast
    weight).  The fold is made here, then the 2-d linear and a view of
    its output: None where the composite kernel applies as it is."""
    a = dict(zip(("input", "weight", "bias"), args), **kwargs)
    x, w, b = a.get("input"), a.get("weight"), a.get("bias")
    if not isinstance(x, torch.Tensor) or not isinstance(w, torch.Tensor) \
            or x.dim() < 3 or w.dim() != 2 or not w.requires_grad or \
            x.numel() == 0 or \
            (b is not None and x.dim() == 3 and x.is_contiguous()):
        return None
    with mode:
        y = torch.nn.functional.linear(x.reshape(-1, x.shape[-1]), w, b)
        return y.view(tuple(x.shape[:-1]) + (y.shape[-1],))


def blas_workspaces(rec, ws_bytes, name, args):
    """The cuBLAS and cuBLASLt workspaces a GEMM's first call on a
    thread and stream allocates, after the op's output (its structured
    kernel's set_output comes first; the H200 traces show output, cuBLAS
    workspace, cuBLASLt workspace)."""
    # cublas_handle_stream_to_workspace(): one a (handle, stream);
    # handles are per thread (a CUDA graph's capture stream gets its
    # own, in the graph's pool: the H200 trace of
    # tests/data/pools/graph.real.csv)
    from . import fake
    thr = (threading.get_ident(), fake._CURRENT_STREAM[0])
    if name in BLAS_OPS:
        onfake_cuda = any(isinstance(a, torch.Tensor) and
                          a.device.type == "cuda" for a in args)
        if onfake_cuda and thr not in rec.workspaces:
            rec.workspaces.add(thr)
            # live under its key until clearCublasWorkspaces() frees it
            # (Recorder.clear_blas_workspaces); otherwise for the process
            rec.alloc(ws_bytes, "other", "cuBLAS workspace",
                      ("workspace",) + thr)
    if name == "addmm" and len(args) > 2 and \
            isinstance(args[0], torch.Tensor) and \
            args[0].dim() == 1 and args[0].device.type == "cuda" and \
            isinstance(args[2], torch.Tensor) and \
            args[2].dim() == 2 and args[2].shape[0] > 1 and \
            args[2].shape[1] > 1:
        # addmm with a 1-D bias runs cublasLt (gemm_and_bias),
        # whose workspace, at::cuda::getCUDABlasLtWorkspace(), is
        # allocated once a thread and stream, as cuBLAS's (a capture
        # stream gets its own: tests/data/pools/graph.real.csv): 1 MiB
        # on the H200 with PyTorch 2.11 (the snapshot's frames),
        # CUBLASLT_WORKSPACE_SIZE KiB if set.
        # Only where isInputCompliesAddmmCudaLt allows it: mat2 at
        # least 2 x 2 (a Linear to one feature runs cuBLAS's GEMM).
        # PyTorch 2.11, as the H200 runs it, checks mat2 alone: a
        # Linear of one row (word_language_model's generate.py) takes
        # the workspace there; later versions check mat1 too.
        thr = ("lt",) + thr
        if thr not in rec.workspaces:
            rec.workspaces.add(thr)
            lt = int(os.environ.get("CUBLASLT_WORKSPACE_SIZE",
                                    "1024")) * 1024
            rec.alloc(lt, "other", "cuBLASLt workspace",
                      ("workspace",) + thr)


def _bn_cudnn(x, w, has_bias, rm, rv, eps):
    """Whether a training-mode batch norm of input X on the GPU takes cuDNN
    (_select_batch_norm_backend in Normalization.cpp):
    an input of 3 or more dimensions, neither it nor the weight bfloat16,
    half only with float parameters, an affine weight and bias, running
    statistics (or none, in training), at most 880801 rows, cudnn enabled,
    eps at least CUDNN_BN_MIN_EPSILON (0 in cuDNN 8 and 9), fewer than
    2**31 - 1 elements.  Otherwise batch_norm_cuda (native)."""
    if not isinstance(w, torch.Tensor) or not has_bias:
        return False
    stats = isinstance(rm, torch.Tensor) and isinstance(rv, torch.Tensor)
    return x.dtype != torch.bfloat16 and w.dtype != torch.bfloat16 and \
        (x.dtype != torch.float16 or w.dtype == torch.float32) and \
        (stats or (rm is None and rv is None)) and x.dim() >= 3 and \
        x.shape[0] <= 880801 and torch.backends.cudnn.enabled and \
        (eps is None or eps >= 0.0) and \
        kernels.symsize(x.numel()) < 2 ** 31 - 1


def _bn_channels_last(t):
    """batch_norm_use_channels_last_kernels (which batch_norm_choose_impl
    asks too): T contiguous with stride 1 along C (BatchNorm1d's (N, C)),
    or a 4-d channels_last tensor."""
    return (t.is_contiguous() and t.stride(1) == 1) or \
        (t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last))


def _custom_op_body(func):
    """The Python body the GPU runs for FUNC, an operator made by
    torch.library.custom_op (a CustomOpDef) with no fake of the
    program's (register_fake); None for any other operator.  The op's
    CUDA kernel is its body registered for "cuda", else the one for
    every device (register_kernel(None): CompositeExplicitAutograd),
    CustomOpDef._backend_fns.  Its fake is then PyTorch's own: for an
    op that only mutates its arguments and returns None, one that
    allocates nothing (utils.generate_trivial_fake_impl: scattermoe's
    scatter2scatter, whose body makes its Triton kernel's scratch
    tensors), otherwise an error ("There was no fake impl
    registered").  An op with a fake of the program's keeps it: its
    body may call native code that a fake tensor cannot enter (a CUDA
    extension's), which is why such a fake is written."""
    ns = getattr(func, "namespace", "aten")
    if ns in ("aten", "prims", "prim", "_c10d_functional", "c10d"):
        return None
    try:
        from torch._library.custom_ops import _maybe_get_opdef
        opdef = _maybe_get_opdef(func)
    except Exception:   # (a PyTorch without it; an op not of one)
        return None
    if opdef is None or getattr(opdef, "_abstract_fn", True) is not None:
        return None
    fns = getattr(opdef, "_backend_fns", None) or {}
    return fns.get("cuda") or fns.get(None)


_INPLACE_VIEW = {}   # OpOverload -> whether it carries Tag.inplace_view


def _inplace_view(func):
    iv = _INPLACE_VIEW.get(func)
    if iv is None:
        iv = _INPLACE_VIEW[func] = \
            torch.Tag.inplace_view in getattr(func, "tags", ())
    return iv


class Dispatch:
    """One recording's dispatch: REC the trace, OPT the recorder's
    options, KN what is known of values (known.Known), WATCH the progress
    and repeated-assumption guard (known.Watch)."""

    def __init__(self, rec, opt, kn, watch):
        self.rec = rec
        self.opt = opt
        self.kn = kn
        self.watch = watch
        dev = devices.DEVICES[opt.device]
        self.major, self.minor = dev[1], dev[2]
        self.sms = dev[4]
        self._bce_neg = None     # weakref: BCE with logits backward's -self
        self.branch = None       # the node taking the plain path (_Plain)
        self.ws_bytes = devices.cublas_workspace_bytes(
            self.major, self.minor, os.environ.get("CUBLAS_WORKSPACE_CONFIG"))
        self.values_cpu = getattr(opt, "values", "rules") == "cpu"
        self.sym = None   # --symbolic (symbolic.py), set by fake.run
        self.pinned = set()   # StorageImpls made pinned (_storage_key)
        self.host_op, self.has_tensor = host.classifier(torch)
        self.host_rng = host.HostRNG(torch, rec)
        # id(storage) -> a weak reference whose callback frees it
        self.refs = {}
        # id(storage) -> the autograd node (id, sequence number) whose
        # evaluation made it, for storages made in a backward
        self.born = {}
        # id(storage) -> how many of the engine's input buffers hold the
        # one tensor a backward formula gave two inputs (accumulates)
        self.shared = {}
        # OpOverload -> (its packet's name, whether its only kernel is a
        # CompositeImplicitAutograd one, whether _dynamic may answer it):
        # asked once an op, not at every call.
        self.opinfo = {}
        self.bodies = {}    # op -> its custom_op body or None
        # the nested tensors' stand-ins (attention.Nested)
        self.nested = attention.Nested()
        # cudnn.benchmark's keys found so far (kernel_events)
        self.cudnn_found = set()
        self.fft_noted = set()
        # the same workspace rule for the GEMMs Inductor's pad_mm pass
        # benchmarks while it compiles (compiled.PadBench); a function of
        # the recorder's, not of this object (whose storages' weak
        # references end with the recording)
        rec.blas_workspaces = functools.partial(blas_workspaces, rec,
                                                self.ws_bytes)

    def op_info(self, func):
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        nm = func.name()
        imp = nm.startswith("aten::") and \
            has(nm, "CompositeImplicitAutograd") and not any(
                has(nm, k) for k in ("CUDA", "CPU",
                                     "CompositeExplicitAutograd"))
        name = func.overloadpacket.__name__
        ent = self.opinfo[func] = (name, imp,
                                   _may_be_dynamic(torch, func, name))
        return ent

    def on_storage_death(self, key):
        rec = self.rec

        def cb(_ref):
            rec.retired.discard(key)
            rec.free(key)
            self.born.pop(key, None)
            self.shared.pop(key, None)
            # the storage's id may be another's next: what the values
            # kept under it goes with it
            vs = getattr(getattr(rec, "known", None), "values", None)
            if vs is not None:
                vs.storage_died(key)
        return cb

    @staticmethod
    def _storage_key(t):
        """The StorageImpl of T (its views' too), or None."""
        try:
            return t.untyped_storage()._cdata
        except Exception:   # (a tensor without storage)
            return None

    def dispatch(self, mode, func, args, kwargs):
        """FUNC(*ARGS, **KWARGS) dispatched to MODE (Track), under the
        fake mode: its result, its allocations recorded."""
        if func is _PRIM_DEVICE:
            # A fake tensor's .device (FakeTensor dispatches it: most of
            # the calls that come here, from PyTorch's Python code and
            # the program's): the fake mode answers it, nothing is
            # allocated or known by it (the path below would come to
            # the same answer through _dynamic, at the cost of an op).
            # A FakeTensor's answered here as FakeTensorMode's handler
            # (_device_handler) answers it, without dispatching again
            # (half the calls that come here on makeMoE, from ATen's
            # C++ kernels: matmul's).
            if type(args[0]) is FakeTensor and len(args) == 1 and \
                    not kwargs:
                return _META if args[0].fake_mode.in_kernel_invocation \
                    else args[0].fake_device
            return func(*args, **(kwargs or {}))
        rec, kn, watch = self.rec, self.kn, self.watch
        kwargs = kwargs or {}
        if torch._C._get_dispatch_mode(FAKE_KEY) is None:
            # The fake mode set aside (unset_fake_temporarily: a
            # DeviceMesh's CPU tensors): real values, nothing to note.
            return func(*args, **kwargs)
        if func is _IS_PINNED or func is _PIN_MEMORY:
            # Pinned host memory is the CUDA driver's (cudaHostAlloc,
            # cudaPointerGetAttributes): never asked.  A pin is the
            # tensor itself; pinned is what a factory made with
            # pin_memory=True (below), which C++ code asserts (DDP's
            # reducer with static_graph or find_unused_parameters:
            # all_reduce_local_used_map's pinned copy).
            if func is _PIN_MEMORY:
                return args[0]
            return isinstance(args[0], torch.Tensor) and \
                self._storage_key(args[0]) in self.pinned
        if kwargs.get("pin_memory"):
            out = self.dispatch(mode, func, args,
                                dict(kwargs, pin_memory=False))
            if isinstance(out, torch.Tensor):
                key = self._storage_key(out)
                if key is not None:
                    self.pinned.add(key)
                    weakref.finalize(out, self.pinned.discard, key)
            return out
        name, imp, dyn = self.opinfo.get(func) or self.op_info(func)
        if self.host_op(args, kwargs):
            # Host code runs for real (host.py): every tensor a plain
            # CPU one, every device the CPU.  A factory op whose CPU
            # output would be large while a module is built (weights
            # made before .cuda(): host.building_model) stays fake (not
            # under --values cpu, which computes every value:
            # docs/recording-values.md), unless it draws from a generator
            # the program made and passed (host.own_generator): data.
            if name in host.BULK and not self.values_cpu and \
                    not self.has_tensor(args, kwargs) and \
                    not host.own_generator(kwargs):
                out = func(*args, **kwargs)
                if isinstance(out, torch.Tensor) and \
                        host.building_model(torch, host.nbytes(out)):
                    if self.host_rng.draws(func):
                        self.host_rng.advance(func, args, kwargs)
                    return out
            with unset_fake_temporarily():
                return func(*args, **kwargs)
        if args and type(args[0]) in (torch.Tensor, torch.nn.Parameter) \
                and _inplace_view(func):
            # A view op in place (detach_, t_, as_strided_...) of a plain
            # tensor not on the host: a meta one, made for real as it is
            # without the recorder (transformers' from_pretrained builds
            # the model under torch.device("meta"), where torch.tensor([])
            # under torch.inference_mode detaches its result in place).
            # FakeTensorMode refuses metadata mutations of tensors not its
            # own; the meta kernel runs.
            with unset_fake_temporarily():
                return func(*args, **kwargs)
        if func is _COPY_ and len(args) >= 2 and \
                type(args[0]) in (torch.Tensor, torch.nn.Parameter) \
                and args[0].device.type == "cpu" and \
                isinstance(args[1], FakeTensor):
            # A GPU tensor copied into a real host tensor (a pinned
            # buffer): the values of the host rules.
            vals = _host_values(rec, args[1].expand(args[0].shape))
            if vals is not None:
                with unset_fake_temporarily():
                    args[0].copy_(vals)
            return args[0]
        if imp:
            # Only under torch.inference_mode (no autograd key to
            # decompose it) does an op whose only kernel is a
            # CompositeImplicitAutograd one (linear, conv2d, to, ...)
            # come here: run that kernel here, as autograd would, so
            # that its ops (addmm, convolution, _to_copy) and their
            # kernels' workspaces are recorded as outside inference
            # mode.  An op with a kernel of its own (silu_backward:
            # CPU and CUDA kernels beside math_silu_backward) runs
            # that kernel on the GPU and is not decomposed.  The C++
            # kernel, as the GPU runs it, not a Python one that
            # torch._decomp registers for tracing (its dropout clones
            # the input in eval, ATen's returns it).
            if name == "linear":
                folded = _fold_linear(mode, args, kwargs)
                if folded is not None:
                    return folded
            with mode:
                return func._op_dk(
                    torch._C.DispatchKey.CompositeImplicitAutograd,
                    *args, **kwargs)
        body = self.bodies.get(func, _RUN)
        if body is _RUN:
            body = self.bodies[func] = _custom_op_body(func)
        if body is not None:
            # A torch.library.custom_op with no fake of the program's:
            # the GPU runs its Python body (its CUDA or default
            # kernel), whose ops are recorded one by one, as a
            # CompositeImplicit kernel's above (_custom_op_body)
            with mode:
                return body(*args, **kwargs)
        # A CPU tensor beside GPU ones (a 0-dim one: the fake mode takes
        # it anywhere) where the op's CUDA kernel checks their devices
        samedevice.check(func, args, kwargs)
        if name in overflow.OPS:
            # a number out of the tensor's type, which the CUDA kernel's
            # Scalar::to refuses
            overflow.check(name, args, kwargs)
        watch.tick()
        dv = kwargs.get("device")
        if isinstance(dv, torch.device) and dv.type == "cuda" and \
                dv.index:
            # One rank sees one GPU, cuda:0 (the autograd engine's
            # device guard counts one device): cuda:N is cuda:0.
            kwargs = dict(kwargs, device=torch.device("cuda", 0))
        if self.sym is not None:
            # --symbolic: the sentinel's sizes become the symbol
            args, kwargs = self.sym.convert(self.fm, func, args, kwargs)
        if self.branch is not None or (name in _PLAIN_FIRST and
                                       not torch.is_grad_enabled()):
            r = self._plain_branch(mode, func, args, kwargs)
            if r is not _RUN:
                return r
        before = _BEFORE.get(name)
        if before is not None:
            r = before(self, mode, func, name, args, kwargs)
            if r is not _RUN:
                return r
        if not self.values_cpu and self.host_rng.draws(func):
            # a draw on a fake host tensor (a CPU weight's init): the
            # host's generator advances as the real one's (HostRNG;
            # under --values cpu the draw itself is made from it,
            # Values._run)
            self.host_rng.advance(func, args, kwargs)
        out = _dynamic(torch, rec, func, args, kwargs) if dyn else None
        if out is None:
            try:
                if func is _UNSAFE_VIEW:
                    # ATen's _unsafe_view is view's output without the
                    # view relation (which autograd, above this mode,
                    # has already settled); view's fake kernel makes the
                    # same tensor, and the fake mode caches view's
                    # output, not _unsafe_view's (FakeTensorMode's
                    # _validate_cache_key: matmul's every call ran
                    # torch._refs' reshape helper in Python).
                    out = _VIEW(*args, **kwargs)
                elif self.sym is not None:
                    out = self.sym.run(func, args, kwargs)
                elif func in _STORAGE_SET and \
                        isinstance(args[0], FakeTensor):
                    with ftm.disable_fake_tensor_cache(args[0].fake_mode):
                        out = func(*args, **kwargs)
                elif func in _REF_DRAWS and \
                        kwargs.get("generator") is not None:
                    out = func(*args, **{k: v for k, v in kwargs.items()
                                         if k != "generator"})
                else:
                    out = func(*args, **kwargs)
            except (ftm.UnsupportedOperatorException,
                    ftm.UnsupportedFakeTensorException) as e:
                host_out = self._host_op(func, args, kwargs)
                if host_out is not _RUN:
                    return host_out
                if isinstance(e, ftm.UnsupportedOperatorException):
                    raise no_fake(func) from None
                raise
        kn.after(func, name, args, kwargs, out)
        after = _AFTER.get(name)
        if after is not None:
            return after(self, name, args, kwargs, out)
        return self.outputs(name, args, kwargs, out)

    def _quantize(self, mode, func, name, args, kwargs):
        # quantize_per_tensor / quantize_per_channel of a fake host
        # tensor: the fake mode's answer is a float tensor (its meta
        # kernel's), not a quantized one; run on the host (_host_op)
        return self._host_op(func, args, kwargs)

    def _host_op(self, func, args, kwargs):
        """FUNC of host tensors only, some of them fake (a GPU tensor's
        host copy over host.HOST_FAKE_BYTES stays fake), where the fake
        mode cannot run it (no fake kernel, or a quantized output, which
        no fake tensor holds): run for real on the host values of the
        fake ones (fake._host_values, as .numpy() makes them), as the
        real run does on the CPU; its outputs are host tensors.  FX
        quantization's convert_fx quantizes the weights of a model moved
        to the CPU after quantization-aware training on the GPU
        (torch.quantize_per_channel).  _RUN where a GPU tensor is among
        the arguments."""
        leaves, spec = tree_flatten((args, kwargs))
        flat = [a for a in leaves if isinstance(a, torch.Tensor)]
        if not any(type(a) is FakeTensor for a in flat) or \
                any((a.fake_device if type(a) is FakeTensor else
                     a.device).type != "cpu" for a in flat):
            return _RUN
        real = {}
        for a in flat:
            if type(a) is FakeTensor and id(a) not in real:
                v = _host_values(self.rec, a, large=True)
                if v is None:
                    return _RUN
                real[id(a)] = v
        args, kwargs = tree_unflatten([real.get(id(a), a) for a in leaves],
                                      spec)
        with unset_fake_temporarily():
            return func(*args, **kwargs)

    # -- before the op: ops answered without running it (_BEFORE) -----------
    # Each returns the op's result, or _RUN where the op runs as any other.
    def _item(self, mode, func, name, args, kwargs):
        v = self.kn.item(args[0])
        dt = args[0].dtype
        if dt != torch.bool and not dt.is_complex:
            # a number an assert statement compares with a constant:
            # what lets the program go on, whatever the rules said
            # (values.asserted_number)
            a = values.asserted_number(dt.is_floating_point)
            if a is not None:
                if v is known.UNKNOWN or v != a:
                    values.assume(self.rec, "item:assert", a)
                return a
        if v is not known.UNKNOWN:
            return v
        v = _item_value(self.rec, dt, torch)
        if dt == torch.bool:
            # a comparison's answer bounds what it compared (Known.answered)
            self.kn.answered(args[0], v)
        return v

    def _host_bool(self, mode, func, name, args, kwargs):
        # torch.equal, torch.allclose: a host bool from the data,
        # computed as the CUDA build does (values.host_bool), its
        # ops recorded
        with mode:
            return values.host_bool(self.rec, name, *args, **kwargs)

    def _sparse(self, mode, func, name, args, kwargs):
        # an op of sparse COO tensors on the GPU (sparse.py)
        r = sparse.HANDLERS[name](self, mode, func, name, args, kwargs)
        return _RUN if r is None else r

    # -- CTC loss (ctc_loss_impl in LossCTC.cpp; the kernels of
    # LossCTC.cu and cudnn/LossCTC.cpp) ----------------------------------
    @staticmethod
    def _lengths(v):
        """A CTC call's lengths as a list: an int list, or a host tensor
        (real values); None for a GPU tensor, whose values are fake."""
        if isinstance(v, torch.Tensor):
            if isinstance(v, FakeTensor) or v.device.type != "cpu":
                return None
            with unset_fake_temporarily():
                return [int(x) for x in v.reshape(-1).tolist()]
        return [int(x) for x in v]

    def _use_cudnn_ctc(self, mode, func, name, args, kwargs):
        # _use_cudnn_ctc_loss: ctc_loss_impl's question, a CUDA kernel
        # without a fake one.  cuDNN's CTC takes float log_probs on the
        # GPU, int32 1-D contiguous targets (on the host for the list
        # overload), blank 0, every input as long as log_probs and every
        # target shorter than 256 and than its input; the tensor overload
        # wants int32 lengths too.
        lp, tg, il, tl = args[:4]
        blank = args[4] if len(args) > 4 else kwargs.get("blank", 0)
        tensors = func._overloadname == "Tensor"
        ok = torch.backends.cudnn.enabled and blank == 0 and \
            tg.dim() == 1 and lp.dtype == torch.float32 and \
            tg.dtype == torch.int32 and lp.device.type == "cuda" and \
            tg.is_contiguous() and lp.dim() == 3
        if tensors:
            ok = ok and il.dtype == torch.int32 and tl.dtype == torch.int32
        else:
            ok = ok and tg.device.type == "cpu"
        if not ok:
            return False
        ils, tls = self._lengths(il), self._lengths(tl)
        if ils is None or tls is None:
            return _RUN
        if not tensors and any(i != lp.shape[0] for i in ils):
            return False
        return all(t < 256 and t <= i for t, i in zip(tls, ils))

    def _ctc(self, mode, func, name, args, kwargs):
        # _ctc_loss and its backward on the GPU (ctc_loss_gpu_template,
        # ctc_loss_backward_gpu_template): the lengths (the tensor
        # overloads read them on the host, ctc_loss_tensor) copied to the
        # GPU with the targets' offsets, three int64 vectors of the batch
        # freed on return; forward log_alpha (batch x T x 2*S+1, S the
        # longest target) and the losses; backward log_beta like
        # log_alpha, freed on return, and the gradient, full_like the
        # log-probs; for a large problem (2*T + 2.4*batch + 0.2*classes
        # > 450) the blanks' term first: log_alpha + log_beta over the
        # even positions and its logsumexp, zero_infinity's where() a
        # new gradient.
        backward = name.startswith("_ctc_loss_backward")
        names = (("grad",) if backward else ()) + (
            "log_probs", "targets", "input_lengths", "target_lengths") + \
            (("neg_log_likelihood", "log_alpha", "blank", "zero_infinity")
             if backward else ("blank", "zero_infinity"))
        a = dict(zip(names, args), **kwargs)
        lp, tg = a["log_probs"], a["targets"]
        if not isinstance(lp, torch.Tensor) or lp.device.type != "cuda":
            return _RUN
        ils, tls = self._lengths(a["input_lengths"]), \
            self._lengths(a["target_lengths"])
        if ils is None or tls is None:
            return _RUN
        n = lp.shape[1]
        # (the backward of 2-D targets takes it from log_alpha)
        smax = a["log_alpha"].shape[2] // 2 \
            if backward and tg.dim() != 1 else max(tls)
        dev = lp.device
        with torch.no_grad(), mode:
            tl_t = torch.tensor(tls, dtype=torch.int64, device=dev)
            il_t = torch.tensor(ils, dtype=torch.int64, device=dev)
            offsets = torch.empty(n, dtype=torch.int64, device=dev)
            if not backward:
                log_alpha = torch.empty(n, lp.shape[0], 2 * smax + 1,
                                        dtype=lp.dtype, device=dev)
                nll = torch.empty(n, dtype=lp.dtype, device=dev)
                out = nll, log_alpha
            else:
                log_alpha, nll = a["log_alpha"], a["neg_log_likelihood"]
                log_beta = torch.empty_like(log_alpha)
                # (full_like(log_probs, -inf) on the GPU, then filled by
                # the kernels: its block, not its constant, which the
                # known values would keep as the gradient's)
                grad = torch.empty_like(lp)
                t, c = lp.shape[0], lp.shape[2]
                if 2 * t + (24 * n) // 10 + (2 * c) // 10 > 450:
                    shape = (n, log_alpha.shape[1], smax + 1)
                    la = log_alpha.as_strided(shape, (
                        log_alpha.stride(0), log_alpha.stride(1),
                        log_alpha.stride(2) * 2))
                    lb = log_beta.as_strided(shape, (
                        log_beta.stride(0), log_beta.stride(1),
                        log_beta.stride(2) * 2))
                    s = la + lb
                    blank = torch.logsumexp(s, 2, True)
                    del s
                    grad.narrow(2, a["blank"], 1).sub_(
                        blank.permute(1, 0, 2).exp_())
                    del blank
                    if a.get("zero_infinity"):
                        inf = nll.view(1, n, 1) == float("inf")
                        grad = torch.where(
                            inf, torch.zeros((), dtype=grad.dtype,
                                             device=dev), grad)
                        del inf
                del log_beta
                out = grad
            del offsets, il_t, tl_t
        # their values (--values cpu): the CPU kernels' on the inputs'
        # (ctc_loss_cpu_template and ctc_loss_backward_cpu_template
        # compute LossCTC.cu's losses, log_alpha and gradient in the same
        # layout, zero_infinity's zeros too)
        self.kn.after(func, name, args, kwargs, out)
        return out

    def _ctc_loss(self, mode, func, name, args, kwargs):
        ovl = func._overloadname
        if ovl == "default":
            return self._ctc(mode, func, name, args, kwargs)
        if ovl != "Tensor":
            return _RUN     # (the out= overloads)
        # the tensor overloads read their lengths on the host
        # (ctc_loss_tensor, ctc_loss_backward_tensor) and call the list
        # ones
        backward = name == "_ctc_loss_backward"
        op = torch.ops.aten._ctc_loss_backward.default if backward else \
            torch.ops.aten._ctc_loss.default
        i = 3 if backward else 2
        args = list(args)
        for j in (i, i + 1):
            v = self._lengths(args[j])
            if v is None:
                return _RUN
            args[j] = v
        with mode:
            return op(*args, **kwargs)

    def _logsumexp(self, mode, func, name, args, kwargs):
        # logsumexp's CompositeExplicitAutograd kernel
        # (logsumexp_out_impl in ReduceOps.cpp), whose meta kernel gives
        # the output alone: the max over the dims (keepdim), its abs()
        # and == inf mask for the masked_fill_ (freed at once), the
        # input minus the max (input-sized, exp_ in place), the sum into
        # the output, then log_ and add_ in place; the difference and
        # the max freed on return.  Run so, below autograd (its node is
        # made).
        if func._overloadname != "default":
            return _RUN     # (the out= and named overloads)
        a = dict(zip(("self", "dim", "keepdim"), args), **kwargs)
        x = a["self"]
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda" or \
                not x.is_floating_point() or x.numel() == 0:
            return _RUN
        dims = a["dim"]
        dims = [dims] if isinstance(dims, int) else list(dims)
        if not dims:
            return _RUN     # (no dims: PyTorch's own error)
        keep = a.get("keepdim", False)
        with torch.no_grad(), mode:
            maxes = torch.amax(x, dims, True)
            squeezed = maxes if keep else maxes.squeeze(
                [d % x.dim() for d in dims])
            # (masked_fill_'s abs() and mask: their blocks, values
            # unread, the max's are not known either way)
            a_ = torch.empty_like(squeezed)
            m_ = torch.empty(squeezed.shape, dtype=torch.bool,
                             device=x.device)
            del m_, a_
            diff = (x - maxes).exp_()
            out = torch.sum(diff, dims, keep)
            del diff
            out.log_().add_(squeezed)
            del squeezed, maxes
        return out

    def _pack_padded(self, mode, func, name, args, kwargs):
        # _pack_padded_sequence's output has as many rows as the lengths
        # sum to, which the fake mode cannot know
        # (DynamicOutputShapeException).  The lengths are a host tensor
        # (pack_padded_sequence moves them to the CPU), real: ATen's own
        # algorithm (_pack_padded_sequence in PackedSequence.cpp) runs on
        # the fake input, below autograd (its node is made): from the
        # shortest sequence up, each run of time steps over the batch
        # still going is made contiguous (a copy unless it is the whole
        # batch of a time-major input), the runs are concatenated, and the
        # batch sizes are a host tensor.
        a = dict(zip(("input", "lengths", "batch_first"), args), **kwargs)
        x, lengths = a["input"], a["lengths"]
        if isinstance(lengths, FakeTensor) or \
                not isinstance(x, torch.Tensor) or x.device.type != "cuda":
            return _RUN
        with unset_fake_temporarily():
            lens = [int(v) for v in lengths.tolist()]
        n = len(lens)
        sizes, prev = [], 0
        with torch.no_grad(), mode:
            if a.get("batch_first"):
                # (under the mode, as every op here: the values'
                # shadows follow it, --values cpu; made outside it the
                # view had none, and the packed data, the loss and the
                # gradients had no values)
                x = x.transpose(0, 1)
            steps = []
            for i in range(n):
                length = lens[n - 1 - i]
                if length > prev:
                    steps.append(x[prev:length, :n - i].contiguous().view(
                        -1, *x.shape[2:]))
                    sizes.extend([n - i] * (length - prev))
                    prev = length
            data = torch.cat(steps)
            del steps
        with unset_fake_temporarily():
            batch_sizes = torch.tensor(sizes, dtype=torch.int64)
        return data, batch_sizes

    def _lstsq(self, mode, func, name, args, kwargs):
        # linalg_lstsq carries the dynamic_output_shape tag (its CPU
        # drivers gelsd and gelss compute the residuals only where the
        # rank is full), which the fake mode refuses.  On CUDA gels is
        # the only driver (get_default_lstsq_driver) and every size is
        # static: linalg_lstsq_out (BatchLinearAlgebra.cpp), its outputs
        # empty, makes infos (int32, one a matrix), and
        # linalg_lstsq_out_info resizes the solution to (*, nrhs,
        # max(m, n)) transposed (column major; a vector right-hand side:
        # (*, max(m, n))), copies b into its first m rows, makes the
        # input's column-major working copy (copyBatchedColumnMajor),
        # runs lstsq_kernel, and where m > n squares rows n: of the
        # solution in place and sums them into the residuals; the
        # solution is then restrided to its first n rows; rank and
        # singular_values stay empty (gels sets neither).  lstsq_kernel
        # (cuda/linalg/BatchLinearAlgebra.cpp): cuBLAS's batched gels
        # for m >= n, m <= 256 and a solution of at least max(2, m / 16)
        # matrices (apply_gels_batched: a column-major clone of the
        # working copy at the solution's batch and two arrays of device
        # pointers); otherwise linalg_lstsq_gels, tau (*, min(m, n))
        # and, for m < n, a column-major clone of A^H, through
        # cuSOLVER's geqrf and ormqr and a triangular solve, with their
        # workspaces (_gels_looped).  Then _linalg_check_errors' bools.
        # On the host (a fake CPU tensor: efficient-kan's KANLinear
        # fits its spline coefficients to noise with lstsq in its
        # __init__, before .to("cuda")) the sizes are static too where
        # every matrix has full rank (assumed): the CPU's default driver
        # gelsy (get_default_lstsq_driver), gelsd and gelss give the
        # rank (*), gelsd and gelss the singular values (*, min(m, n)),
        # and the residuals are computed where m > n and the rank is n
        # (linalg_lstsq's documentation).  Host memory is not recorded:
        # the outputs' sizes and layout alone, as ATen makes them.
        a = dict(zip(("self", "b", "rcond"), args), **kwargs)
        A, B = a.get("self"), a.get("b")
        host = isinstance(A, torch.Tensor) and A.device.type == "cpu"
        driver = a.get("driver")
        drivers = (None, "gels", "gelsy", "gelsd", "gelss") if host \
            else (None, "gels")
        if not isinstance(A, torch.Tensor) or \
                A.device.type != ("cpu" if host else "cuda") or \
                not isinstance(B, torch.Tensor) or A.dim() < 2 or \
                B.dim() < 1 or A.dim() - B.dim() not in (0, 1) or \
                (driver.lower() if isinstance(driver, str) else driver) \
                not in drivers:
            return _RUN     # (PyTorch's own errors)
        driver = (driver or ("gelsy" if host else "gels")).lower()
        if host:
            vs = self.rec.known.values
            ra, rb = vs.real(A), vs.real(B)
            if ra is not None and rb is not None:
                # values known (host code on a Parameter's views, which
                # are fake: pykan's KANLayer fits its coefficients from
                # its grid): the CPU's own result, real, its errors the
                # program's
                with vs.unset():
                    return tuple(torch.linalg.lstsq(
                        ra, rb, rcond=a.get("rcond"), driver=driver))
        m, n = A.shape[-2], A.shape[-1]
        batch = tuple(A.shape[:-2])
        # linalg_solve_is_vector_rhs: b of one dimension, or of A's
        # batch shape plus m
        vector = B.dim() == 1 or (A.dim() - 1 == B.dim() and
                                  tuple(B.shape) == tuple(A.shape[:-1]))
        b2 = B.unsqueeze(-1) if vector else B
        if b2.shape[-2] != m:
            return _RUN
        sbatch = tuple(torch.broadcast_shapes(batch, tuple(b2.shape[:-2])))
        nrhs = b2.shape[-1]
        real = A.real.dtype if A.is_complex() else A.dtype
        count = _prod_shape(batch)
        big = max(m, n)

        def empty(size, dtype):
            # (on the host a factory with no tensor argument is real:
            # the outputs are made from A, fake)
            if host:
                return A.new_empty(size, dtype=dtype)
            return torch.empty(size, dtype=dtype, device=A.device)
        with torch.no_grad(), mode:
            infos = empty((max(1, count),), torch.int32).zero_()
            if vector:
                sol = empty(sbatch + (big,), A.dtype).unsqueeze(-1)
            else:
                sol = empty(sbatch + (nrhs, big), A.dtype).transpose(-2, -1)
            sol.narrow(-2, 0, m).copy_(b2)
            work = A.mT.clone(memory_format=torch.contiguous_format).mT
            scount = _prod_shape(sbatch)
            if host:
                pass        # (LAPACK's workspaces: host memory)
            elif m >= n and m <= 256 and scount >= max(2, m // 16):
                # apply_gels_batched (the solution's batch decides):
                # the working copy broadcast to the solution's batch and
                # cloned column major (cloneBatchedColumnMajor: cuBLAS's
                # matrices must not overlap), then get_device_pointers'
                # arrays of its matrices and the solution's (int64, one
                # a matrix), freed on return, the last made first
                held = [work.expand(sbatch + (m, n)).mT.clone(
                    memory_format=torch.contiguous_format).mT]
                held += [torch.empty((scount,), dtype=torch.long,
                                     device=A.device) for _ in range(2)]
                while held:
                    held.pop()
            else:
                # tau, then for m < n A^H's column-major clone: freed
                # on the kernel's return
                held = [torch.empty(batch + (min(m, n),), dtype=A.dtype,
                                    device=A.device)]
                if m < n:
                    held.append(work.mH.mT.clone(
                        memory_format=torch.contiguous_format).mT)
                    sol.narrow(-2, m, n - m).zero_()
                self._gels_looped(A, m, n, nrhs, count, scount)
                while held:
                    held.pop()      # (A^H's scope ends first, then tau's)
            if host:
                self.rec.assume("linalg:full-rank")
            if m > n:
                raw = sol.narrow(-2, n, m - n)
                raw.pow_(2)
                res = raw.sum(-2, dtype=real)
                del raw
            else:
                res = empty((0,), real)
            del work
            if not host:
                self.temps(name, _check_errors(infos.numel()))
            del infos
            out = sol.narrow(-2, 0, n)
            if vector:
                out = out.squeeze(-1)
            rank = empty(batch if driver != "gels" else (0,), torch.long)
            sv = empty(batch + (min(m, n),)
                       if driver in ("gelsd", "gelss") else (0,), real)
        vs = self.rec.known.values
        ra, rb = vs.real(A), vs.real(B)
        if ra is not None and rb is not None:
            # the values where A's and b's are known (--values cpu): the
            # CPU's gels, the CUDA build's driver (known host values
            # returned above)
            try:
                with vs.unset():
                    r = torch.linalg.lstsq(ra, rb, driver="gels")
                vs._set(out, vs._layout(out, r.solution))
                if m > n and tuple(r.residuals.shape) == tuple(res.shape):
                    vs._set(res, r.residuals)
            except Exception as e:
                vs.lost(name, e)
        return out, res, rank, sv

    def _gels_looped(self, A, m, n, nrhs, count, scount):
        """linalg_lstsq_gels' cuSOLVER and cuBLAS calls on the looped
        path (BatchLinearAlgebra.cpp), between tau (and A^H's clone) and
        their frees: geqrf_kernel over A's COUNT matrices (n columns;
        A^H's m for m < n): geqrf_cusolver, or for at most 256 rows and
        at least max(2, rows / 16) matrices (A^H's, m < n: lstsq_kernel
        took this path for m >= n because they were not)
        geqrf_batched_cublas, get_device_pointers' arrays of the
        matrices and of tau's columns, then the cuBLAS handle; then for
        m >= n ormqr_kernel over the solution's SCOUNT (Q^H b, m rows) and
        triangular_solve_kernel, for m < n the triangular solve first
        and ormqr after (Q z, n rows).  geqrf and ormqr each make their
        infos (at::zeros, one int) and allocate their workspace for
        each matrix and free it after the call (kernels.
        geqrf_workspace_bytes, ormqr_workspace_bytes).  The triangular
        solve runs cuBLAS's trsm matrix by matrix for at most 8
        matrices of 64 columns or more, otherwise its batched trsm with
        get_device_pointers' arrays of the matrices and of the
        solution's (int64, one a matrix), then the thread's cuBLAS
        handle (its workspace at the first, blas_workspaces).  Complex
        matrices, and a batched solve over more than 512 columns
        (MAGMA's), are not measured: assumption linalg:workspace."""
        es = A.element_size()
        if A.is_complex():
            self.rec.assume("linalg:workspace")
            es = 0

        def solver(matrices, nbytes):
            info = torch.zeros((1,), dtype=torch.int32, device=A.device)
            for _ in range(matrices if nbytes else 0):
                key = object()
                self.rec.alloc(nbytes, "temporary",
                               "cusolver workspace", key=key)
                self.rec.free(key)
            del info

        def cublas(matrices):
            # get_device_pointers' two arrays, the handle, freed last
            # made first on return
            ptrs = [torch.empty((matrices,), dtype=torch.long,
                                device=A.device) for _ in range(2)]
            self.rec.blas_workspaces("triangular_solve", (A,))
            ptrs.pop()
            ptrs.pop()

        def trsm(cols):
            if scount <= 8 and cols >= 64 or cols > 512:
                if scount > 8:
                    self.rec.assume("linalg:workspace")     # (MAGMA's)
                self.rec.blas_workspaces("triangular_solve", (A,))
            else:
                cublas(scount)

        rows = max(m, n)
        if rows <= 256 and count >= max(2, rows // 16):
            cublas(count)
        else:
            solver(count, es and kernels.geqrf_workspace_bytes(min(m, n),
                                                               es))
        orm = es and kernels.ormqr_workspace_bytes(max(m, n), min(m, n),
                                                   nrhs, es)
        if m >= n:
            solver(scount, orm)
            trsm(n)
        else:
            trsm(m)
            solver(scount, orm)

    def _nested_mask(self, mode, func, name, args, kwargs):
        # nn.TransformerEncoder's sparsity fast path (eval, a key
        # padding mask) asks whether the mask keeps a prefix of each
        # row, which depends on its values: computed as ATen computes
        # it where they are known (values.py's shadows; the ops
        # recorded).  Otherwise assumed not (assumption nested:padded):
        # the layers run on the padded batch with the mask, which
        # allocates at least what the nested path would.
        if self.rec.known.values.real(args[1]) is None:
            self.rec.assume("nested:padded")
            return False
        with torch.no_grad(), mode:
            return attention.left_aligned(*args, **kwargs)

    def _nested_from_mask(self, mode, func, name, args, kwargs):
        # The batch packed into a nested tensor, stood in by its buffer
        # (attention.Nested): no fake kernels for nested tensors.
        with torch.no_grad(), mode:
            return attention.from_mask(self.rec, self.nested, *args,
                                       **kwargs)

    def _to_padded(self, mode, func, name, args, kwargs):
        if not isinstance(args[0], torch.Tensor) or \
                self.nested.get(args[0]) is None:
            return _RUN
        with torch.no_grad(), mode:
            return attention.to_padded(self.nested, *args, **kwargs)

    def _safe_softmax(self, mode, func, name, args, kwargs):
        # _safe_softmax (the math attention path's softmax) has no CUDA
        # kernel: its CompositeExplicitAutograd kernel runs softmax, the
        # rows that are all -inf (isneginf, all over the dim), a 0-dim
        # zero and where() written into softmax's output, the input-sized
        # boolean temporary freed on return.  The fake mode's meta kernel
        # would give the output alone.  Run as the GPU runs it, below
        # autograd (its node, SafeSoftmaxBackward0, is already made).
        x = args[0]
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda":
            return _RUN
        dim = args[1] if len(args) > 1 else kwargs["dim"]
        dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
        with torch.no_grad(), mode:
            out = torch.softmax(x, dim, dtype=dtype)
            masked = x.isneginf()
            rows = masked.all(dim, keepdim=True)
            zero = torch.scalar_tensor(0.0, dtype=out.dtype,
                                       device=out.device)
            torch.where(rows, zero, out, out=out)
            del zero, rows, masked
        return out

    def _fused_obs_fq(self, mode, func, name, args, kwargs):
        # torch.ao's FusedMovingAvgObsFakeQuantize (QAT's default on
        # fbgemm/x86): fused_moving_avg_obs_fake_quant's CUDA kernel
        # sizes a per-channel observer's empty running min and max
        # (registered as torch.tensor([])) to the channels at its first
        # call, filled with +inf and -inf, and its scale and zero point
        # with them; the meta kernel gives the output and mask only, so
        # the buffers stayed empty (the host's calculate_qparams, convert
        # and a checkpoint saw no channels).  Then it takes the rows'
        # (or the tensor's) aminmax, two temporaries freed before the
        # fake-quantized output and its mask, which the op's own fake
        # kernel makes (_RUN; its schema marks the four buffers
        # written, so their known values are forgotten).
        x, rmin, rmax, scale, zp = args[0], args[3], args[4], args[5], \
            args[6]
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda":
            return _RUN
        ch = args[10] if len(args) > 10 else kwargs.get("ch_axis", 0)
        per_row = args[11] if len(args) > 11 else \
            kwargs.get("per_row_fake_quant", False)
        with torch.no_grad(), mode:
            if per_row:
                y = x
                if x.dim() != 2:
                    order = list(range(x.dim()))
                    order[ch], order[0] = 0, ch
                    y = x.permute(order).flatten(1)
                if rmin.numel() == 0:
                    n = x.size(ch)
                    rmin.resize_(n).fill_(float("inf"))
                    rmax.resize_(n).fill_(float("-inf"))
                    scale.resize_(n)
                    zp.resize_(n)
                lo, hi = torch.aminmax(y, dim=1)
            else:
                lo, hi = torch.aminmax(x.contiguous())
            del lo, hi
        return _RUN

    def _fake_quant(self, mode, func, name, args, kwargs):
        # torch.ao's fake quantization (FakeQuantize, the learnable
        # _LearnableFakeQuantize, fake_quantize_per_tensor_affine and
        # per_channel_affine, which decompose into the cachemask ops): no
        # fake (meta) kernel, and on a CUDA input each refused.  The
        # outputs and temporaries of PyTorch's functions of these names,
        # in their order: the cachemask ops make Y and a bool mask like
        # the input (a per-channel integer zero point's aminmax first,
        # read on the host and freed); the learnable forwards read the
        # scale and zero point (per tensor: on the host; per channel:
        # round().clamp_() then an int32 copy) and keep the cachemask
        # op's Y, its mask freed; their backwards make dX, dScale_vec and
        # dZeroPoint_vec like X and return dX and the two sums (a
        # bfloat16 X per channel: float copies of dY, X, scale and zero
        # point first), freeing the vectors when they return.  The host
        # reads (item) are left out: they allocate nothing on the GPU.
        x = args[0]
        if not _cuda_tensor(x):
            return _RUN
        pf = torch.preserve_format
        a = list(args)
        with torch.no_grad(), mode:
            if name in ("fake_quantize_per_tensor_affine_cachemask",
                        "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
                        "fake_quantize_per_channel_affine_cachemask"):
                if name == "fake_quantize_per_channel_affine_cachemask" \
                        and not a[2].dtype.is_floating_point:
                    lo, hi = torch.aminmax(a[2])
                    del lo, hi
                y = torch.empty_like(x, memory_format=pf)
                mask = torch.empty_like(x, dtype=torch.bool, memory_format=pf)
                out = (y, mask)
            elif name == "_fake_quantize_learnable_per_tensor_affine":
                y, mask = torch.ops.aten.fake_quantize_per_tensor_affine_cachemask(
                    x, 1.0, a[3], a[3], a[4])
                del mask
                out = y
            elif name == "_fake_quantize_learnable_per_channel_affine":
                zr = a[2].round().clamp_(a[4], a[5])
                zi = zr.to(torch.int32)
                del zr
                y, mask = torch.ops.aten.fake_quantize_per_channel_affine_cachemask(
                    x, a[1], zi, a[3], a[4], a[5])
                del mask, zi
                out = y
            elif x.numel() == 0 or a[1].numel() == 0:
                return _RUN
            elif name == "_fake_quantize_learnable_per_tensor_affine_backward":
                dy, xx = a[0], a[1]
                dx = torch.empty_like(xx, memory_format=pf)
                ds = torch.empty_like(xx, memory_format=pf)
                dz = torch.empty_like(xx, memory_format=pf)
                out = (dx, ds.sum().unsqueeze(0), dz.sum().unsqueeze(0))
                del dz, ds
            else:       # _fake_quantize_learnable_per_channel_affine_backward
                dy, xx, sc, zp, axis = a[0], a[1], a[2], a[3], a[4]
                if xx.dtype == torch.bfloat16:
                    xx, dy = xx.float(), dy.float()
                    sc, zp = sc.float(), zp.float()
                zr = zp.round().clamp_(a[5], a[6])
                lo, hi = torch.aminmax(zr)
                dx = torch.empty_like(xx, memory_format=pf)
                ds = torch.empty_like(xx, memory_format=pf)
                dz = torch.empty_like(xx, memory_format=pf)
                dims = [i for i in range(xx.dim()) if i != axis]
                out = (dx, ds.sum(dims), dz.sum(dims))
                del dz, ds, hi, lo, zr, sc, zp, dy, xx
        self.kn.after(func, name, args, kwargs, out)
        return out

    def _grouped_mm(self, mode, func, name, args, kwargs):
        # _grouped_mm (a mixture of experts' grouped GEMM) on CUDA takes
        # float32, bfloat16 or float16 (_grouped_mm_validate_inputs):
        # bfloat16 all through runs the CUTLASS kernel, anything else
        # _grouped_mm_fallback's mm_out per group into the output.  The
        # meta kernel accepts only bfloat16 (an fp32 model's experts,
        # whose input Transformers casts to the weights' dtype since
        # grouped_mm is not autocast-enabled, raised "Expected inputs
        # of BF16 type").  The output is the same on either path:
        # create_grouped_gemm_output_tensor's, its last dimension's
        # stride padded to 16 bytes, in mat_a's dtype
        # (_resolve_grouped_mm_out_dtype); mm_out writes into it.
        a, b = args[0], args[1]
        if not isinstance(a, torch.Tensor) or \
                not isinstance(b, torch.Tensor) or \
                a.device.type != "cuda" or a.dtype != b.dtype or \
                a.dtype not in (torch.float32, torch.float16) or \
                a.dim() not in (2, 3) or b.dim() not in (2, 3):
            return _RUN
        offs = args[2] if len(args) > 2 else kwargs.get("offs")
        out_dtype = args[4] if len(args) > 4 else kwargs.get("out_dtype")
        if out_dtype not in (None, a.dtype) or \
                (offs is not None) != (a.dim() == 2 or b.dim() == 2):
            return _RUN
        if a.dim() == 2 and b.dim() == 2:
            size = [offs.shape[0], a.shape[0], b.shape[1]]
        elif a.dim() == 2:
            size = [a.shape[0], b.shape[-1]]
        elif b.dim() == 2:
            size = [a.shape[1], b.shape[1]]
        else:
            size = [a.shape[0], a.shape[1], b.shape[-1]]
        align = 16 // a.element_size()
        padded = (size[-1] + align - 1) // align * align
        stride = [padded, 1] if (a.dim() == 2) != (b.dim() == 2) else \
            [size[1] * padded, padded, 1]
        with torch.no_grad(), mode:
            out = torch.empty_strided(size, stride, dtype=a.dtype,
                                      device=a.device)
        return out

    def _host_indices(self, mode, func, name, args, kwargs):
        # index_put_ of a GPU tensor with indices on the host (CleanRL's
        # pmfs[torch.arange(n), action], then IndexBackward0): the real
        # kernels copy each to the tensor's device first (index_put_'s
        # make_info, computeLinearIndex), which the fake kernels refuse
        # (a device mismatch, raised in the autograd engine: the process
        # ended with std::terminate).  The copies are made here, on the
        # GPU, and the op runs on them.
        x = args[0] if args else None
        idx = args[1] if len(args) > 1 else kwargs.get("indices")

        def host(i):
            return isinstance(i, torch.Tensor) and i.device.type == "cpu" \
                and i.dim() > 0

        if not isinstance(x, torch.Tensor) or x.device.type != "cuda" or \
                not isinstance(idx, (list, tuple)) or not any(map(host, idx)):
            return _RUN
        with mode:
            moved = [i.to(x.device) if host(i) else i for i in idx]
            args = (x, moved) + tuple(args[2:])
            kwargs = {k: v for k, v in kwargs.items() if k != "indices"}
            return func(*args, **kwargs)

    def _index_devices(self, mode, func, name, args, kwargs):
        # x[idx]: index's meta function (check_indices_on_cpu_or_selfdevice)
        # takes indices on the host or on x's device only.  A host x
        # indexed by GPU indices (a table made on the CPU, indices
        # computed on the GPU: Time-Series-Library's ETSformer, a
        # scheduler's alphas_cumprod[timesteps]) stops a real run there;
        # the fake kernels, which lift the host tensor, did not.
        x = args[0] if args else None
        idx = args[1] if len(args) > 1 else kwargs.get("indices")
        if isinstance(x, torch.Tensor) and isinstance(idx, (list, tuple)):
            for i in idx:
                if isinstance(i, torch.Tensor) and \
                        i.device.type != "cpu" and i.device != x.device:
                    raise RuntimeError(
                        "indices should be either on cpu or on the same "
                        "device as the indexed tensor (%s)" % x.device)
        # A GPU x indexed by host indices (swin's pos_embedding[
        # relative_indices[..., 0], relative_indices[..., 1]], a table
        # of CPU indices): index's meta function calls make_info, whose
        # expandTensors(self, indices, ensure_same_device=true) copies
        # each host index to x's device (index.to(self.device())), a
        # host mask as its nonzero() (nonzero_out(...).to(self.device()),
        # one (k, mask.dim()) tensor, its columns the indices) before
        # build_index_op allocates the output; the copies are the
        # TensorIterator's owned inputs, freed when the op returns.
        # The fake kernels read host indices where they are: the copies
        # are made here, on the GPU, and the op runs on them.  Then
        # make_info converts each int32 index to int64 (indice.to(kLong),
        # after all the device copies): a long copy of the indices'
        # broadcast shape (expand_outplace comes first), which replaces
        # the index (an int32 device copy of a host index goes there),
        # freed when the op returns.
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda" or \
                not isinstance(idx, (list, tuple)) or not any(
                    isinstance(i, torch.Tensor) and (
                        i.device.type == "cpu" or i.dtype == torch.int32)
                    for i in idx):
            return _RUN
        with mode:
            moved = []
            for i in idx:
                if not isinstance(i, torch.Tensor) or i.device.type != "cpu":
                    moved.append(i)
                elif i.dtype in (torch.bool, torch.uint8):
                    nz = i.nonzero().to(x.device)
                    moved.extend(nz.select(1, j) for j in range(i.dim()))
                    del nz
                else:
                    moved.append(i.to(x.device))
            shape = torch.broadcast_shapes(*[
                i.shape for i in moved if isinstance(i, torch.Tensor)])
            for j, i in enumerate(moved):
                if isinstance(i, torch.Tensor) and i.dtype == torch.int32:
                    moved[j] = i.expand(shape).to(torch.long)
                del i
            args = (x, moved) + tuple(args[2:])
            kwargs = {k: v for k, v in kwargs.items() if k != "indices"}
            out = func(*args, **kwargs)
            # (TensorIterator's operands, destroyed last to first)
            while moved:
                moved.pop()
        return out

    def _mm_dtypes(self, mode, func, name, args, kwargs):
        # mm and addmm of GPU tensors: addmm_out_cuda_impl (Blas.cpp)
        # refuses matrices of two dtypes ("expected mat1 and mat2 to have
        # the same dtype"), which mm's meta function does not check (bmm's
        # does): F.linear of a float32 input with a bfloat16 weight ran
        # in the recording and stopped the GPU's run (llama-models'
        # Llama 4 with attn_temperature_tuning: its NoPE layers' float32
        # scales turn the queries, then the attention's output, float32).
        a, b = (args[0], args[1]) if name == "mm" else \
            (args[1], args[2]) if len(args) > 2 else (None, None)
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and \
                a.device.type == "cuda" and a.dtype != b.dtype:
            raise RuntimeError(
                "expected mat1 and mat2 to have the same dtype, but got: "
                "%s != %s" % (str(a.dtype).replace("torch.", ""),
                              str(b.dtype).replace("torch.", "")))
        return _RUN

    def _conv_types(self, mode, func, name, args, kwargs):
        # _convolution's check_input_same_type_as_parameters: the input,
        # weight and bias of a convolution share a device and a dtype
        # (type_equal), unless the input is empty (the Empty backend,
        # _select_conv_backend).  The fake mode's convolution takes the
        # input's device and checks neither: a Lightning module moved
        # back to the CPU by the strategy's teardown, then called on a
        # CUDA input (Lightning's PixelCNN tutorial sampling after
        # trainer.test), ran in the recording and stopped on the GPU.
        x = args[0] if args else kwargs.get("input")
        if not isinstance(x, torch.Tensor) or x.numel() == 0:
            return _RUN
        for what, i in (("weight", 1), ("bias", 2)):
            t = args[i] if len(args) > i else kwargs.get(what)
            if isinstance(t, torch.Tensor) and (
                    t.device.type != x.device.type or t.dtype != x.dtype):
                # (Tensor.type(): ATen's toString(), torch.cuda.FloatTensor)
                raise RuntimeError(
                    "Input type (%s) and %s type (%s) should be the same"
                    % (x.type(), what, t.type()))
        return _RUN

    def _index_put(self, mode, func, name, args, kwargs):
        r = self._host_indices(mode, func, name, args, kwargs)
        if r is not _RUN:
            return r
        # index's backward (index_backward) puts the gradient into
        # zeros with _index_put_impl_, in place, on plain tensors; for
        # tensor subclasses (areAnyTensorSubclassLike: the fake ones) it
        # calls the out-of-place index_put, which copies the zeros (a
        # second tensor of the input's size the GPU never makes).  In
        # IndexBackward0 the zeros are the formula's own (new_zeros,
        # referenced nowhere else): put in place, as on the GPU.
        acc = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
        x = args[0] if args else None
        if not acc or not isinstance(x, torch.Tensor) or \
                x.device.type != "cuda":
            return _RUN
        node = _autograd_node()
        if node is None or node.name() != "IndexBackward0":
            return _RUN
        with mode:
            torch.ops.aten._index_put_impl_(x, args[1], args[2], True, True)
        return x

    def _bce_logits_backward(self, mode, func, name, args, kwargs):
        # binary_cross_entropy_with_logits_backward (autograd's
        # FunctionsManual): on plain tensors, without create_graph,
        # input.sigmoid().sub_(target).mul_(grad) (with pos_weight,
        # t.add(1).sub_(target).mul_(input.sigmoid()).sub_(t); then
        # mul_(weight)): the gradient is the sigmoid's (or t.add(1)'s)
        # one block.  For tensor subclasses (areAnyTensorSubclassLike,
        # isTensorSubclassLike: every tensor under a dispatch mode, the
        # fake one too) it calls the out-of-place sub and mul, a new
        # block each, the GPU never makes.  In the node, a sub or mul
        # whose self is none of the node's saved tensors (pos_weight's
        # mul(target) is out of place on the GPU too) is one of those:
        # done in place.  The target's gradient
        # (binary_cross_entropy_with_logits_target_backward) is the
        # same: with pos_weight, log_sigmoid(-self).sub_(log_sigmoid(
        # self).mul_(pos_weight)).mul_(grad_output) on plain tensors;
        # then mul_(weight); but without pos_weight -self * grad_output
        # is out of place on every tensor: a mul whose self is the
        # node's own neg (Dispatch._neg) runs as it is.
        # binary_cross_entropy_target_backward (BinaryCrossEntropy-
        # Backward0's target: logit(self).neg_().mul_(grad), then
        # mul_(weight)) likewise: its mul whose self is none of the
        # saved tensors, in place.
        if torch.is_grad_enabled() or len(args) != 2 or \
                not all(isinstance(a, torch.Tensor) for a in args) or \
                args[0].device.type != "cuda":
            return _RUN
        node = _autograd_node()
        if node is None:
            return _RUN
        x = args[0]
        nn = node.name()
        if nn == "BinaryCrossEntropyWithLogitsBackward0":
            attrs = ("_saved_self", "_saved_target", "_saved_weight",
                     "_saved_pos_weight")
            neg = self._bce_neg
            if neg is not None and neg() is x:
                return _RUN
        elif nn == "BinaryCrossEntropyBackward0" and name == "mul":
            attrs = ("_saved_self", "_saved_target", "_saved_weight")
        else:
            return _RUN
        saved = []
        for attr in attrs:
            try:
                saved.append(getattr(node, attr))
            except Exception:
                return _RUN
        if saved[1] is None:
            return _RUN
        for v in saved:
            if isinstance(v, torch.Tensor) and (
                    v is x or v._base is x or x._base is v or
                    (x._base is not None and x._base is v._base)):
                return _RUN
        if x._base is not None or \
                x.dtype != torch.result_type(x, args[1]) or \
                tuple(x.shape) != tuple(torch.broadcast_shapes(
                    x.shape, args[1].shape)):
            return _RUN
        inplace = getattr(getattr(torch.ops.aten, name + "_"),
                          func._overloadname)
        with mode:
            inplace(x, args[1], **kwargs)
        return x

    def _neg(self, name, args, kwargs, out):
        # -self in BinaryCrossEntropyWithLogitsBackward0 (the target's
        # gradient without pos_weight): the mul that follows is out of
        # place on the GPU too (Dispatch._bce_logits_backward).
        if isinstance(out, torch.Tensor) and out.device.type == "cuda":
            node = _autograd_node()
            if node is not None and \
                    node.name() == "BinaryCrossEntropyWithLogitsBackward0":
                self._bce_neg = weakref.ref(out)
        return self.outputs(name, args, kwargs, out)

    def _log_sigmoid(self, name, args, kwargs, out):
        # log_sigmoid_forward's buffer: log_sigmoid_forward_cuda returns
        # at::empty({0}) for it (the CPU kernel fills one of the
        # input's size, as the fake kernel makes it) and
        # log_sigmoid_backward_cuda never reads it: on a GPU the output
        # alone is allocated (F.logsigmoid, nn.LogSigmoid).
        if isinstance(out, tuple) and len(out) == 2 and \
                isinstance(out[0], torch.Tensor) and \
                out[0].device.type == "cuda":
            return self.outputs(name, args, kwargs, out, flat=[out[0]])
        return self.outputs(name, args, kwargs, out)

    def _zeros_inplace(self, mode, func, name, args, kwargs):
        # Backward formulas that put the gradient into zeros of their
        # own, in place on plain tensors and with the out-of-place op
        # for tensor subclasses (areAnyTensorSubclassLike or
        # isTensorSubclassLike: the fake ones too, a copy of the zeros
        # the GPU never makes): gather_backward's scatter_add_ into
        # grad.new_zeros (GatherBackward0); value_selecting_reduction_
        # backward's scatter_ (max, min, median, nanmedian, kthvalue and
        # mode along a dimension, sort, topk); cummaxmin_backward's
        # scatter_add_ (cummax, cummin); masked_select_backward's
        # masked_scatter_ into zeros_like of the broadcast input;
        # take_backward's put_(accumulate); index_select_backward's
        # index_add_ into grad.new_zeros; trace_backward's index_fill_
        # of the flat zeros.  In those nodes the op's self is that
        # formula's zeros, referenced nowhere else: done in place, as
        # on the GPU.
        if torch.is_grad_enabled() or not args or \
                not isinstance(args[0], torch.Tensor) or \
                args[0].device.type != "cuda":
            return _RUN
        node = _autograd_node()
        if node is None or node.name() not in _ZEROS_NODES.get(name, ()):
            return _RUN
        inplace = getattr(getattr(torch.ops.aten, name + "_", None),
                          func._overloadname, None)
        if inplace is None:
            return _RUN
        with mode:
            inplace(*args, **kwargs)
        return args[0]

    def _fresh_mask(self, mode, func, name, args, kwargs):
        # Formulas that combine two comparison masks of their own with
        # logical_and_ / logical_or_ on plain tensors and out of place
        # for tensor subclasses (a mask of the input's size the GPU
        # never makes): evenly_distribute_backward (max, min, median
        # and nanmedian of a whole tensor: input.isnan() with
        # value.isnan(), taken in place on CUDA inputs),
        # clamp_backward and clamp_backward_min_max with tensor bounds
        # (self >= min with self <= max; self < min with min < max,
        # self > max with max < min).  The op's self is that formula's
        # mask, referenced nowhere else: done in place when it is
        # already the result's shape and dtype (bool).
        if torch.is_grad_enabled() or len(args) != 2 or \
                not all(isinstance(a, torch.Tensor) for a in args) or \
                args[0].device.type != "cuda" or \
                args[0].dtype != torch.bool or args[0]._base is not None:
            return _RUN
        node = _autograd_node()
        if node is None or node.name() not in _MASK_NODES:
            return _RUN
        x = args[0]
        if tuple(x.shape) != tuple(torch.broadcast_shapes(
                x.shape, args[1].shape)):
            return _RUN
        inplace = getattr(getattr(torch.ops.aten, name + "_"),
                          func._overloadname, None)
        if inplace is None:
            return _RUN
        with mode:
            inplace(x, args[1])
        return x

    def _median_all(self, mode, func, name, args, kwargs):
        # median() and nanmedian() of a whole CUDA tensor (median_impl):
        # sorted = self.flatten().sort() values (its indices freed at
        # once); median: where(sorted[-1].isnan(), sorted[-1],
        # sorted[(n - 1) / 2]); nanmedian: sorted[((n - 1) -
        # sorted.isnan().sum().item()) / 2].clone(); then sorted freed.
        # The fake kernel makes the 0-dim output alone.
        x = args[0] if args else None
        if func not in (_aten.median.default, _aten.nanmedian.default) or \
                not _cuda_tensor(x) or x.numel() == 0:
            return _RUN
        n = x.numel()
        with torch.no_grad(), mode:
            s = torch.sort(torch.flatten(x))[0]
            if name == "median":
                last = s[-1]
                out = torch.where(torch.isnan(last), last, s[(n - 1) // 2])
                del last
            else:
                k = ((n - 1) - torch.isnan(s).sum().item()) // 2
                out = s[k].clone()
            del s
        return out

    def _gru_cell(self, mode, func, name, args, kwargs):
        # nn.GRUCell on a CUDA input (GRUCell in RNN.cpp: the two gate
        # GEMMs, then _thnn_fused_gru_cell): the fused cell and its
        # backward have a CUDA kernel and no fake (meta) kernel, so
        # their tensors are made here as RNN.cu's
        # _thnn_fused_gru_cell_cuda makes them: the workspace (hx's
        # rows x 5 * hidden, hx's dtype; autograd keeps it for backward)
        # then hy (empty_like hx); _thnn_fused_gru_cell_backward_cuda:
        # grad_input_gates and grad_hidden_gates (rows x 3 * hidden,
        # the workspace's dtype), grad_hx (empty_like grad_hy), then
        # with biases the two gates' sums over the rows.  Their values
        # (_cell_values): RNN.cu's gru_cell_forward / gru_cell_backward.
        a = list(args) + [None] * 5
        if name == "_thnn_fused_gru_cell":
            hx = kwargs.get("hx", a[2])
            if not _cuda_tensor(hx) or hx.dim() != 2:
                return _RUN
            with torch.no_grad(), mode:
                ws = torch.empty((hx.size(0), hx.size(1) * 5),
                                 dtype=hx.dtype, device=hx.device)
                hy = torch.empty(hx.shape, dtype=hx.dtype, device=hx.device)
            ins = [kwargs.get("input_gates", a[0]),
                   kwargs.get("hidden_gates", a[1]), hx,
                   kwargs.get("input_bias", a[3]),
                   kwargs.get("hidden_bias", a[4])]
            self._cell_values(name, _gru_fwd, ins, 3, (hy, ws))
            return hy, ws
        g, ws = kwargs.get("grad_hy", a[0]), kwargs.get("workspace", a[1])
        bias = kwargs.get("has_bias", a[2])
        if not _cuda_tensor(ws) or not _cuda_tensor(g) or ws.dim() != 2:
            return _RUN
        rows, h = ws.size(0), ws.size(1) // 5
        with torch.no_grad(), mode:
            gi = torch.empty((rows, 3 * h), dtype=ws.dtype, device=ws.device)
            gh = torch.empty((rows, 3 * h), dtype=ws.dtype, device=ws.device)
            ghx = torch.empty(g.shape, dtype=g.dtype, device=g.device)
            outs = (gi, gh, ghx)
            self._cell_values(name, _gru_bwd, [g, ws], 2, outs)
            bi = gi.sum(0) if bias else None
            bh = gh.sum(0) if bias else None
        return gi, gh, ghx, bi, bh

    def _lstm_cell(self, mode, func, name, args, kwargs):
        # nn.LSTMCell on a CUDA input (LSTMCell in RNN.cpp: the two gate
        # GEMMs, then _thnn_fused_lstm_cell): PyTorch's meta kernel
        # (_meta_registrations.py's rnn_cell_checkSizes) reads .device
        # of the biases, None for an LSTMCell(bias=False), and stopped
        # the recording there; made here as RNN.cu's
        # _thnn_fused_lstm_cell_cuda makes them: the workspace
        # (empty_like input_gates, rows x 4 * hidden; autograd keeps it
        # for backward), then hy and cy (empty_like cx), returned as
        # (hy, cy, workspace).  _thnn_fused_lstm_cell_backward_impl_cuda:
        # nothing where neither gradient is defined, else grad_gates
        # (empty_like workspace) and grad_cx (empty_like cx), then with
        # biases grad_gates' sum over the rows.  Their values
        # (_cell_values): RNN.cu's lstm_cell_forward / lstm_cell_backward.
        a = list(args) + [None] * 6
        if name == "_thnn_fused_lstm_cell":
            ig, hg = kwargs.get("input_gates", a[0]), \
                kwargs.get("hidden_gates", a[1])
            cx = kwargs.get("cx", a[2])
            if not _cuda_tensor(cx) or not _cuda_tensor(ig) or \
                    cx.dim() != 2:
                return _RUN
            with torch.no_grad(), mode:
                ws = torch.empty(ig.shape, dtype=ig.dtype, device=ig.device)
                hy = torch.empty(cx.shape, dtype=cx.dtype, device=cx.device)
                cy = torch.empty(cx.shape, dtype=cx.dtype, device=cx.device)
            ins = [ig, hg, cx, kwargs.get("input_bias", a[3]),
                   kwargs.get("hidden_bias", a[4])]
            self._cell_values(name, _lstm_fwd, ins, 3, (hy, cy, ws))
            return hy, cy, ws
        ghy, gcy = kwargs.get("grad_hy", a[0]), kwargs.get("grad_cy", a[1])
        cx, cy = kwargs.get("cx", a[2]), kwargs.get("cy", a[3])
        ws, bias = kwargs.get("workspace", a[4]), kwargs.get("has_bias", a[5])
        if ghy is None and gcy is None:
            return None, None, None
        if not _cuda_tensor(ws) or not _cuda_tensor(cx) or ws.dim() != 2:
            return _RUN
        with torch.no_grad(), mode:
            gg = torch.empty(ws.shape, dtype=ws.dtype, device=ws.device)
            gcx = torch.empty(cx.shape, dtype=cx.dtype, device=cx.device)
            self._cell_values(name, _lstm_bwd, [ghy, gcy, cx, cy, ws], 5,
                              (gg, gcx))
            gb = gg.sum(0) if bias else None
        # _thnn_fused_lstm_cell_backward (CompositeImplicitAutograd, the
        # formula's caller) returns (grad_gates, grad_gates, grad_cx,
        # grad_bias, grad_bias): one tensor to each pair of inputs, held
        # by two input buffers (accumulates)
        for t in (gg, gb):
            if t is not None:
                self.shared[id(t.untyped_storage())] = 2
        return gg, gcx, gb

    def _cell_values(self, name, fn, ins, need, outs):
        """The values of a fused RNN cell's fake OUTS (their shadows,
        values.py): FN of the CPU values of INS (the first NEED of them
        required where given, the rest optional biases), where all are
        had; else none (not the zeros --values cpu gives torch.empty)."""
        vs = self.rec.known.values
        reals = [None if t is None else vs.real(t) for t in ins]
        if any(r is None and ins[i] is not None
               for i, r in enumerate(reals)) or \
                (need > 2 and reals[0] is None):
            for o in outs:
                vs.shadow.pop(o, None)
            return
        try:
            with vs.unset():
                rs = [r.to(o.dtype) for o, r in zip(outs, fn(torch, *reals))]
            for o, r in zip(outs, rs):
                vs._set(o, vs._layout(o, r))
        except Exception as e:
            vs.lost(name, e)

    def _plain_branch(self, mode, func, args, kwargs):
        # Formulas whose branch for tensor subclasses (every fake
        # tensor: isTensorSubclassLike, areAnyTensorSubclassLike) takes
        # other ops than plain CUDA tensors take (_PLAIN): at the
        # node's first op its rule runs the plain branch's first steps
        # as the GPU runs them (recorded) and says whether the branches
        # part.  Where they do, the subclass branch's ops from the
        # rule's first (_Plain.begin) run unrecorded; at the op that
        # brings the plain branch's last input (_Plain.at) the plain
        # branch's ops are run and recorded, and once the node is done
        # its result's block becomes the node's result's (adopt).
        br = self.branch
        if br is not None and br.busy:
            return _RUN
        node = _autograd_node()
        if br is not None and node is not br.node:
            self.branch = None
            self.end_branch(br)
            br = None
        if node is None:
            return _RUN
        if br is None:
            rule = _PLAIN.get(node.name())
            if rule is None or torch.is_grad_enabled():
                return _RUN
            br = self.branch = _Plain(node)
            br.busy = True
            try:
                with mode:
                    rule(br, node)
            finally:
                br.busy = False
        if not br.suppress:
            return _RUN
        if br.begin is not None:
            if not br.begin(self, func, args):
                return _RUN
            br.begin = None
        if br.at is not None and br.at(self, func, args):
            br.at = None
            br.busy = True
            try:
                with mode:
                    br.out = br.make(args)
                    br.drop()
            finally:
                br.busy = False
        out = func(*args, **kwargs)
        if self.values_cpu:
            # its values all the same under --values cpu: the node's
            # result is this branch's, unrecorded but computed (the
            # rules' shadows and ranges not: under them the result is
            # unknown, as before)
            self.kn.after(func,
                          (self.opinfo.get(func) or self.op_info(func))[0],
                          args, kwargs, out)
        if isinstance(out, torch.Tensor):
            # weakly: AccumulateGrad takes a gradient it holds the only
            # reference to, and copies any other (clone_obey_contract)
            br.last = weakref.ref(out)
        return out

    def end_branch(self, br):
        """The node of BR is done: its plain branch's locals go, and its
        result's block becomes the subclass branch's result's (or that
        result is recorded as any op's output where there is none)."""
        br.drop()
        out, last = br.out, br.last and br.last()
        br.out = br.last = None
        if not br.suppress or last is None or last.device.type != "cuda":
            return
        if out is None or not self.adopt(out, last):
            self.note_all([last], "backward")

    def adopt(self, src, dst):
        """DST's storage takes over the recorded block of SRC's, of the
        same size: the block is freed when DST's storage dies."""
        try:
            a, b = src.untyped_storage(), dst.untyped_storage()
        except Exception:
            return False
        ka, kb = id(a), id(b)
        live = self.rec.live
        if ka == kb:
            return True
        if ka not in live or kb in live or a.nbytes() != b.nbytes():
            return False
        live[kb] = live.pop(ka)
        self.refs.pop(ka, None)   # (its callback goes with it)
        self.refs[kb] = weakref.ref(b, self.on_storage_death(kb))
        return True

    def _encoder_layer(self, mode, func, name, args, kwargs):
        # nn.TransformerEncoderLayer's fast path (eval, no grad):
        # _transformer_encoder_layer_fwd has no fake kernel in PyTorch
        # 2.11 and a fused op's outputs alone would hide its
        # temporaries.  Run as ATen's transformer_encoder_layer_forward
        # composes it (attention.encoder_layer), on the padded batch or
        # on a nested stand-in's buffer.
        if not isinstance(args[0], torch.Tensor) or args[0].is_nested or \
                args[0].device.type != "cuda":
            return _RUN
        with torch.no_grad(), mode:
            out = attention.encoder_layer(self.rec, self.major, self.nested,
                                          *args, **kwargs)
        if self.nested.get(args[0]) is None:
            # its values: the op's CPU kernel on the inputs' (values.py)
            self.kn.after(func, name, args, kwargs, out)
        return out

    def _native_mha(self, mode, func, name, args, kwargs):
        # nn.MultiheadAttention's fast path (eval, no grad): the same
        # composite as the encoder layer's attention.
        if not isinstance(args[0], torch.Tensor) or args[0].is_nested or \
                args[0].device.type != "cuda":
            return _RUN
        with torch.no_grad(), mode:
            out = attention.native_mha(self.rec, self.major, *args,
                                       **kwargs)
        self.kn.after(func, name, args, kwargs, out)
        return out

    def _amp(self, mode, func, name, args, kwargs):
        # No meta kernel: the fake mode would run the CUDA one.
        # In place, on tensors that exist: nothing is allocated
        # (their values are no longer known).
        self.kn.after(func, name, args, kwargs, None)
        return args[0] if name == "_amp_update_scale_" else None

    def _add(self, mode, func, name, args, kwargs):
        rec = self.rec
        if len(args) > 1 and isinstance(args[1], torch.Tensor) and \
                args[1].layout == torch.sparse_coo:
            # a dense tensor plus a sparse one (sparse.py)
            r = sparse.dense_add(self, mode, func, name, args, kwargs)
            return _RUN if r is None else r
        if func is _ADD_TENSOR and self.accumulates(args, kwargs):
            # InputBuffer::accumulate: the engine adds a second
            # gradient into the first in place (old_var.add_(var))
            # when it holds the last reference to a plain dense
            # tensor, but never for tensor subclasses
            # (can_accumulate_inplace), the fake ones included: done
            # in place here, as on the GPU.
            keep = getattr(torch.autograd,
                           "_unsafe_preserve_version_counter", None)
            with (keep(args[0]) if keep else contextlib.nullcontext()):
                args[0].add_(args[1])
            out = args[0].view(args[0].shape)
            self.kn.after(func, name, args, kwargs, out)
            return out
        if rec.math_add and func is _ADD_TENSOR and \
                len(args) == 2 and not kwargs and \
                all(isinstance(a, torch.Tensor) for a in args) and \
                args[0].dtype == torch.result_type(*args) and \
                tuple(args[0].shape) == tuple(torch.broadcast_shapes(
                    args[0].shape, args[1].shape)):
            # The math path's attn + mask (math_sdpa) or at::linear's
            # output + bias (linear): in place, as attn.add_(mask);
            # a view of it goes up to autograd.
            rec.math_add = False
            args[0].add_(args[1])
            out = args[0].view(args[0].shape)
            self.kn.after(func, name, args, kwargs, out)
            return out
        return _RUN

    # -- after the op: its outputs and temporaries (outputs, _AFTER) --------
    def outputs(self, name, args, kwargs, out, flat=None, noted=None):
        """The op's outputs (FLAT, default all of OUT's tensors) in the
        order the kernel makes them, then the call NOTED (allocations
        after the outputs), the GEMMs' workspaces and the kernel's own
        temporaries; returns OUT."""
        if flat is None:
            # (a tensor is a leaf of tree_flatten: itself)
            flat = [out] if isinstance(out, torch.Tensor) else \
                tree_flatten(out)[0]
        self.note_all(flat, name)
        if noted is not None:
            noted()
        self.blas_workspaces(name, args)
        self.temps(name, self.kernel_events(name, args, "forward", out,
                                            kwargs))
        return out

    def _svd(self, name, args, kwargs, out):
        # TORCH_META_FUNC(_linalg_svd) makes U, then Vh, then S (the
        # op returns U, S, Vh); then the kernel's own (_ev_svd)
        if isinstance(out, (tuple, list)) and len(out) == 3:
            return self.outputs(name, args, kwargs, out,
                                flat=[out[0], out[2], out[1]])
        return self.outputs(name, args, kwargs, out)

    def _to_host(self, name, args, kwargs, out):
        if isinstance(out, FakeTensor) and out.device.type == "cpu" and \
                isinstance(args[0], torch.Tensor) and \
                args[0].device.type == "cuda":
            # .cpu(), .to("cpu"): a real host tensor, its values by
            # the host rules (large ones stay fake).
            vals = _host_values(self.rec, out)
            if vals is not None:
                # copy_kernel_cuda's temporaries (_ev_to_host)
                self.run_events(self.kernel_events(name, args, "forward",
                                                   out, kwargs), {},
                                "copy_kernel_cuda source for the host")
                return vals
        return self.outputs(name, args, kwargs, out)

    def _conv(self, name, args, kwargs, out):
        # _convolution of a 1-d convolution (a 3-d weight) on CUDA:
        # "avoid accidentally going through NHWC for permuted 3d input",
        # input.contiguous() before the backend (a copy of a permuted
        # input, made before the output, freed when it returns), then
        # the 4-d views the cuDNN rule sees (_ev_conv).  A 2-d or 3-d
        # one: the cuDNN backend's at::cudnn_convolution(
        # input.contiguous(backend_memory_format), ...), a copy of an
        # input dense in neither layout (Aurora's patch embedding of a
        # rearranged "b t v h w -> b v t h w" batch), at the same places
        x = args[0] if args else None
        copy = None
        if _cuda_tensor(x) and x.dim() == 3 and not x.is_contiguous():
            copy = self.copy_of(x, "convolution 1-d input contiguous copy")
        elif self._cudnn_dense(x, args[1], args[8]) and \
                not x.is_contiguous(
                    memory_format=self._cudnn_format(x, args[1])):
            copy = self.copy_of(x, "cudnn convolution input contiguous "
                                "copy")
        self.outputs(name, args, kwargs, out)
        if copy is not None:
            self.rec.free(copy)
        return out

    def _conv_backward(self, name, args, kwargs, out):
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            return self.outputs(name, args, kwargs, out)
        # cudnn_convolution_backward: grad_input, then its
        # workspace (backward data), grad_weight, then its
        # workspace (backward weight), as run_conv_plan runs.
        # Before them, the cuDNN backend's contiguous copies of a
        # non-contiguous input and grad_output (a slice of
        # torch.cat's gradient), in the layout it runs in
        # (convolution_backward, cudnn_convolution_backward),
        # freed when the call returns.
        copies = self.conv_copies(args)
        for i, phase in enumerate(("data", "weight", "bias")):
            self.note_all(tree_flatten(out[i])[0], name)
            if out[i] is not None:
                self.temps(name + (" bias" if phase == "bias" else ""),
                           self.kernel_events(name, args, phase, out))
            if i == 1:
                for k in copies:
                    self.rec.free(k)
        return out

    def _embedding_backward(self, name, args, kwargs, out):
        rec = self.rec
        keys = {}
        emb = self.embedding_events(name, args)
        small = emb is None and self.embedding_small(name, args)
        if emb:
            # the grad made contiguous, then the sort
            # (kernels.embedding_backward), before grad_weight
            g = args[0]
            if not g.is_contiguous():
                keys["grad"] = self.copy_of(g, "embedding backward grad "
                                            "copy")
            self.run_events(emb[0], keys,
                            "embedding_backward_cuda_kernel temporaries")
        if small:
            # embedding_dense_backward_cuda's one-kernel path (at most
            # 3072 indices): grad_.contiguous(), then
            # indices.contiguous(), before grad_weight; both kept until
            # it returns
            for k, t in (("grad", args[0]), ("indices", args[1])):
                if not t.is_contiguous():
                    keys[k] = self.copy_of(t, "embedding backward %s copy"
                                           % k)
        self.outputs(name, args, kwargs, out)
        if emb:
            self.run_events(emb[1], keys,
                            "embedding_backward_cuda_kernel temporaries")
        for k in ("grad", "indices"):
            if k in keys:
                rec.free(keys[k])
        return out

    @staticmethod
    def embedding_small(name, args):
        """Whether embedding_dense_backward_cuda takes its one-kernel path
        (at most 3072 indices, no scale_grad_by_freq; embedding_events
        gives the other)."""
        try:
            g, idx = args[0], args[1]
            return name == "embedding_dense_backward" and \
                isinstance(g, torch.Tensor) and g.device.type == "cuda" \
                and idx.numel() <= 3072 and not bool(args[4])
        except Exception:
            return False

    def _layer_norm(self, name, args, kwargs, out):
        # layer_norm_cuda / layer_norm_backward_cuda:
        # input.expect_contiguous(), a copy of a
        # non-contiguous input (a residual sum after a
        # transposed attention output), before the outputs;
        # backward copies a non-contiguous grad_out after
        # them (the H200's frames); freed on return.
        rec = self.rec
        copies = []

        def copy(t):
            if _cuda_tensor(t) and not t.is_contiguous():
                copies.append(self.copy_of(t, "layer_norm contiguous copy"))
        if name == "native_layer_norm":
            copy(args[0])
            self.outputs(name, args, kwargs, out)
        else:
            copy(args[1])
            self.outputs(name, args, kwargs, out,
                         noted=lambda: copy(args[0]))
        for k in copies:
            rec.free(k)
        return out

    def _max_pool(self, name, args, kwargs, out):
        # max_pool2d_with_indices_out_cuda: the outputs (output and
        # indices, the structured kernel's), then
        # input_.contiguous(input_.suggest_memory_format()): a copy of
        # an input contiguous in neither layout (SAM 2's pooled q, a
        # view of its qkv projection: 100 MB on the H100).  The backward
        # makes grad_input, then copies input, grad_output and indices
        # in the input's layout.  Freed on return.
        from torch._prims_common import suggest_memory_format
        fwd = name == "max_pool2d_with_indices"
        x = args[0] if fwd else args[1]
        if not _cuda_tensor(x) or x.dim() not in (3, 4):
            return self.outputs(name, args, kwargs, out)
        fmt = suggest_memory_format(x)
        todo = [x] if fwd else \
            [x, args[0], args[7] if len(args) > 7 else kwargs.get("indices")]
        copies = []

        def copy():
            for t in todo:
                if _cuda_tensor(t) and not t.is_contiguous(memory_format=fmt):
                    copies.append(self.copy_of(
                        t, "max_pool2d contiguous copy"))
        self.outputs(name, args, kwargs, out, noted=copy)
        for k in copies:
            self.rec.free(k)
        return out

    def _efficient_forward(self, name, args, kwargs, out):
        flat = tree_flatten(out)[0]
        if len(flat) >= 4:
            # _efficient_attention_forward's philox seed and
            # offset are CPU tensors (outside CUDA graph capture):
            # the H200 trace has no 8-byte blocks there.
            flat = flat[:2]
        return self.outputs(name, args, kwargs, out, flat)

    def _efficient_backward(self, name, args, kwargs, out):
        copy = None
        g = args[0]
        if _cuda_tensor(g) and name != "_efficient_attention_backward":
            # _scaled_dot_product_efficient_attention_backward hands it
            # grad_out.transpose(1, 2)
            g = g.transpose(1, 2)
        if _cuda_tensor(g) and not g.is_contiguous():
            # _efficient_attention_backward: "handle potentially
            # non-contiguous grad_out through a copy" (in its
            # B, M, H, K layout), before the gradients, freed on
            # return.
            copy = self.copy_of(args[0], "_efficient_attention_backward "
                                "grad_out copy")
        flat = tree_flatten(out)[0]
        if len(flat) == 4 and (len(args) < 5 or args[4] is None):
            # _efficient_attention_backward's grad_bias without a bias is
            # an undefined tensor on the GPU, where the fake kernel makes
            # a scalar
            flat = flat[:3]
        self.outputs(name, args, kwargs, out, flat)
        if copy is not None:
            self.rec.free(copy)
        return out

    def _loss(self, name, args, kwargs, out):
        if isinstance(out, torch.Tensor) and out.device.type == "cuda" and \
                out.dim() == 0 and (len(args) < 3 or args[2] != 0):
            # Their structured meta functions build a binary
            # TensorIterator with the output, which allocates it
            # at the inputs' broadcast size; the reduction then
            # resizes it to a scalar, keeping the storage (the
            # H200 trace: an input-sized block that lives as long
            # as the loss).
            full = 1
            for d in torch.broadcast_shapes(args[0].shape, args[1].shape):
                full *= kernels.symsize(d)
            out.untyped_storage().resize_(full * out.element_size())
        return self.outputs(name, args, kwargs, out)

    def _bce(self, name, args, kwargs, out):
        x = args[0] if args else None
        red = args[3] if len(args) > 3 else \
            (kwargs or {}).get("reduction", 1)
        if not isinstance(out, torch.Tensor) or out.device.type != "cuda" \
                or out.dim() != 0 or red == 0 or \
                not isinstance(x, torch.Tensor) or x.dim() == 0:
            return self.outputs(name, args, kwargs, out)
        # binary_cross_entropy_cuda (Loss.cu): the loss is at::empty_like(
        # input); with a reduction, loss.mean() or loss.sum() makes a new
        # scalar (with its reduce kernel's buffers), which
        # loss.resize_as_(it).copy_(it) copies back before it is freed:
        # the scalar returned keeps the input-sized storage, as long as
        # the loss lives (yunjey's VAE: F.binary_cross_entropy(x_reconst,
        # x, size_average=False)).
        shape = tuple(kernels.symsize(d) for d in x.shape)
        n = 1
        strides = []
        for d in reversed(shape):
            strides.insert(0, n)
            n *= d
        isz = out.element_size()
        out.untyped_storage().resize_(n * isz)
        self.outputs(name, args, kwargs, out)
        ev = [("alloc", "reduced", isz)] + kernels.reduce(
            shape, tuple(strides), set(range(len(shape))), isz,
            8 if isz == 8 else 4, 0, self.major, self.minor, self.sms) + \
            [("free", "reduced")]
        self.run_events(ev, {}, "binary_cross_entropy_cuda reduction")
        return out

    def _nonzero(self, name, args, kwargs, out):
        # nonzero_out_cuda's temporaries come before and after its
        # output (kernels.nonzero).
        x = args[0] if args else None
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda" or \
                not isinstance(out, torch.Tensor):
            return self.outputs(name, args, kwargs, out)
        pre, post = kernels.nonzero(kernels.symsize(x.numel()),
                                    x.element_size(), x.is_contiguous(),
                                    self.sms)
        keys, site = {}, KERNEL_SITES.get(name, name)
        self.run_events(pre, keys, site)
        self.note_all([out], name)
        self.run_events(post, keys, site)
        return out

    def _unique(self, name, args, kwargs, out):
        # unique_cuda_template (UniqueCub.cu) for _unique2, _unique and
        # unique_consecutive without dim: the locals of kernels.unique
        # around the outputs, made in the kernel's order (the inverse,
        # data_out, counts).  data_out is at::empty({num_inp}) and
        # counts resize_(num_inp), each then resize_(num_out), which
        # keeps the storage (TensorImpl's resize never shrinks it): the
        # outputs hold num_inp elements whatever the number of distinct
        # values; UniqueCub<bool> makes 2 of each (its output and counts
        # at::empty({2}), counts also for _unique, which drops them).
        x = args[0] if args else None
        kw = kwargs or {}
        if not _cuda_tensor(x) or not isinstance(out, tuple) or \
                len(out) < 2 or self.sym is not None:
            return self.outputs(name, args, kwargs, out)

        consec = name == "unique_consecutive"
        if consec and (args[3] if len(args) > 3 else
                       kw.get("dim")) is not None:
            return self.outputs(name, args, kwargs, out)
        inv, cnt = unique_flags(name, args, kw)
        n = x.numel()
        boolean = x.dtype == torch.bool and not consec
        data, inverse = out[0], out[1]
        counts = out[2] if len(out) > 2 else None
        if boolean:
            keep = [(data, 2)] + ([(counts, 2)] if counts is not None
                                  else [])
        else:
            keep = [(data, n)] + ([(counts, n)] if cnt and
                                  counts is not None else [])
        for t, m in keep:
            # (the fake kernel's own resize_, as the CUDA kernel's: up to
            # the elements it allocates, then back to the shape)
            if isinstance(t, torch.Tensor) and t.dim() == 1 and \
                    t.numel() <= m and \
                    t.untyped_storage().nbytes() < m * t.element_size():
                shape = tuple(t.shape)
                t.resize_((m,))
                t.resize_(shape)
        pre, mid, cpre, post = kernels.unique(
            n, x.element_size(), consec, inv, cnt, x.is_contiguous(),
            boolean, self.sms)
        keys, site = {}, KERNEL_SITES.get(name, name)
        self.run_events(pre, keys, site)
        if boolean:
            # output and counts, then the inverse (UniqueCub<bool>)
            self.note_all([data], name)
            if counts is not None:
                self.note_all([counts], name)
            else:
                # _unique's counts (std::ignore): made, then dropped
                self.run_events([("alloc", "counts", 16)], keys, site)
            if inv:
                self.note_all([inverse], name)
            if counts is None:
                self.run_events([("free", "counts")], keys, site)
            self.run_events(post, keys, site)
            return out
        if inv:
            self.note_all([inverse], name)
        self.run_events(mid, keys, site)
        self.note_all([data], name)
        self.run_events(cpre, keys, site)
        if counts is not None:
            self.note_all([counts], name)
        self.run_events(post, keys, site)
        return out

    def _roll(self, name, args, kwargs, out):
        # roll_cuda rolls one dimension: a copy of a non-contiguous
        # input first (self.contiguous()), then the output, the copy
        # freed on return.  roll_common (no dims: the same through the
        # flattened contiguous input) rolls several dimensions one at
        # a time, each through at::roll: the first dimension's result,
        # then the rest's, each intermediate freed when the call that
        # made it returns (docs/recording.md, roll).
        x = args[0] if args else None
        if not _cuda_tensor(x) or not isinstance(out, torch.Tensor) or \
                x.numel() == 0:
            return self.outputs(name, args, kwargs, out)
        dims = args[2] if len(args) > 2 else (kwargs or {}).get("dims", ())
        ndims = 1 if isinstance(dims, int) else max(1, len(dims or ()))
        nb = kernels.symsize(x.numel()) * x.element_size()
        pre, post = [], []
        if not x.is_contiguous():
            pre += [("alloc", "copy", nb)]
            if ndims == 1:
                post += [("free", "copy")]
            else:
                pre += [("alloc", "dim0", nb), ("free", "copy")]
        elif ndims > 1:
            pre += [("alloc", "dim0", nb)]
        for i in range(1, ndims - 1):
            pre += [("alloc", "dim%d" % i, nb)]
        post += [("free", "dim%d" % i) for i in range(ndims - 2, -1, -1)]
        keys, site = {}, KERNEL_SITES.get(name, name)
        self.run_events(pre, keys, site)
        self.note_all([out], name)
        self.run_events(post, keys, site)
        return out

    def _masked_select(self, name, args, kwargs, out):
        # masked_select_out_cuda_impl: index_out(result, self, {mask})
        # (both broadcast), whose index takes mask.nonzero() (its
        # temporaries, kernels.nonzero, and a long index of a row per
        # selected element), then resizes the output; the indices go
        # as it returns.
        # masked_scatter_backward (MaskedScatterBackward0's gradient of
        # the source) is grad.masked_select(mask), padded with zeros
        # (at::cat) to the source's size where fewer were selected: the
        # count taken as the source's size, as a masked_scatter that
        # fills its source (Qwen2-VL's image features) selects, the
        # output masked_select's.
        x, m = args[0], args[1]
        if not _cuda_tensor(x) or not _cuda_tensor(m) or \
                not isinstance(out, torch.Tensor):
            return self.outputs(name, args, kwargs, out)
        shape = torch.broadcast_shapes(x.shape, m.shape) or (1,)
        me = m.reshape(m.shape or (1,)).expand(shape)
        pre, post = kernels.nonzero(kernels.symsize(me.numel()), 1,
                                    me.is_contiguous(), self.sms)
        keys, site = {}, KERNEL_SITES.get(name, name)
        self.run_events(pre + [("alloc", "indices", kernels.symsize(
            out.numel()) * len(shape) * 8)] + post, keys, site)
        self.note_all([out], name)
        self.run_events([("free", "indices")], keys, site)
        return out

    def _mask_index(self, name, args, kwargs, out):
        # x[mask], index with a bool (or byte) mask on the GPU: the
        # structured meta of index (TensorAdvancedIndexing.cpp) builds
        # make_info, whose expandTensors (IndexingUtils.h) replaces the
        # mask by mask.nonzero() (nonzero_out_cuda: its temporaries,
        # kernels.nonzero, and an (n, mask.dim()) long output, a column
        # an index) before build_index_op makes the result; the nonzero
        # goes when the op returns (the TensorIterator owns its columns).
        x = args[0] if args else None
        nz = _mask_nonzero(x, args[1] if len(args) > 1 else
                           (kwargs or {}).get("indices"), out, self.sms)
        if nz is None:
            return self.outputs(name, args, kwargs, out)
        keys, site = {}, KERNEL_SITES.get(name, name)
        self.run_events(nz[0], keys, site)
        self.outputs(name, args, kwargs, out)
        self.run_events(nz[1], keys, site)
        return out

    def _dropout(self, name, args, kwargs, out):
        flat = tree_flatten(out)[0]
        if len(flat) == 2:
            # dropout_cuda makes the mask first, then the output.
            flat = flat[::-1]
        return self.outputs(name, args, kwargs, out, flat)

    def _cudnn_attention(self, name, args, kwargs, out):
        flat = tree_flatten(out)[0]
        if len(flat) >= 8:
            # _cudnn_attention_forward makes the RNG seed and
            # offset first, then the output and the stats
            # (run_cudnn_SDP_fprop), as the H200's frames show.
            flat = flat[6:8] + flat[:6] + flat[8:]
            if len(args) > 4 and args[4] is False:
                # compute_log_sumexp off (no gradient wanted):
                # _cudnn_attention_forward makes no softmax stats,
                # which the meta kernel returns all the same (the
                # H200's no_grad and inference_mode traces).
                del flat[3]
        return self.outputs(name, args, kwargs, out, flat)

    def _foreach_reduce(self, name, args, kwargs, out):
        ev = self.foreach_events(name, args, kwargs)
        if ev is None or not isinstance(out, (list, tuple)) or \
                len(out) != len(args[0]):
            return self.outputs(name, args, kwargs, out)
        # foreach_tensor_norm_cuda / foreach_tensor_max_cuda
        # (kernels.foreach_reduce): output_per_tensor, the results of
        # the non-empty tensors (vec_res), the unused vec_res, the empty
        # tensors' results, the frees.
        keys = {}
        site = KERNEL_SITES[name]
        full = [o for o, t in zip(out, args[0]) if t.numel() != 0]
        self.run_events(ev[0], keys, site)
        self.note_all(full, name)
        self.run_events(ev[1], keys, site)
        self.note_all([o for o, t in zip(out, args[0]) if t.numel() == 0],
                      name)
        self.run_events(ev[2], keys, site)
        return out

    def _bce_logits(self, name, args, kwargs, out):
        # binary_cross_entropy_with_logits (Loss.cpp, composite in ATen,
        # one op here): log_sigmoid_input = at::log_sigmoid(input)
        # (log_sigmoid_forward_cuda's buffer is empty); with pos_weight,
        # log_weight = (pos_weight - 1).mul(target).add_(1), both freed
        # after log_sigmoid_input.mul_(log_weight); loss = (1 -
        # target).mul_(input).sub_(log_sigmoid_input), which
        # apply_loss_reduction reduces into the op's output (its
        # gpu_reduce_kernel buffers, kernels.reduce) or returns; the
        # locals go as it returns (the H200's lightning GAN: log_sigmoid,
        # loss, the 4-byte mean, loss freed, log_sigmoid freed).
        x, t = args[0], args[1]
        pw = args[3] if len(args) > 3 else kwargs.get("pos_weight")
        red = args[4] if len(args) > 4 else kwargs.get("reduction", 1)
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda" or \
                not isinstance(t, torch.Tensor) or \
                not isinstance(out, torch.Tensor) or x.numel() == 0:
            return self.outputs(name, args, kwargs, out)
        rec, site = self.rec, KERNEL_SITES[name]
        keys = {}
        keys["log_sigmoid"] = object()
        rec.alloc(x.numel() * x.element_size(), "temporary", site,
                  key=keys["log_sigmoid"])
        if isinstance(pw, torch.Tensor):
            n = 1
            for d in torch.broadcast_shapes(pw.shape, t.shape):
                n *= kernels.symsize(d)
            self.run_events([("alloc", "pos_weight - 1",
                              pw.numel() * pw.element_size()),
                             ("alloc", "log_weight", n * pw.element_size()),
                             ("free", "pos_weight - 1"),
                             ("free", "log_weight")], keys, site)
        if red == 0:
            self.outputs(name, args, kwargs, out)
        else:
            keys["loss"] = object()
            rec.alloc(t.numel() * t.element_size(), "temporary", site,
                      key=keys["loss"])
            self.note_all([out], name)
            shape = tuple(t.shape)
            strides, m = [], 1
            for d in reversed(shape):
                strides.insert(0, m)
                m *= kernels.symsize(d)
            if shape:
                self.run_events(kernels.reduce(
                    shape, tuple(strides), set(range(len(shape))),
                    t.element_size(), 8 if t.element_size() == 8 else 4, 0,
                    self.major, self.minor, self.sms), keys,
                    "gpu_reduce_kernel global buffer")
            rec.free(keys.pop("loss"))
        rec.free(keys.pop("log_sigmoid"))
        return out

    def _batch_norm_backward(self, name, args, kwargs, out):
        ev = self.batch_norm_events(args)
        if ev is None or not isinstance(out, (list, tuple)) or \
                len(out) != 3:
            return self.outputs(name, args, kwargs, out)
        # batch_norm_backward_cuda's unfused path
        # (kernels.batch_norm_backward): the outputs among its
        # temporaries.
        keys = {}
        for e in ev:
            if e[0] == "out":
                if isinstance(out[e[1]], torch.Tensor):
                    self.note_all([out[e[1]]], name)
            else:
                self.run_events([e], keys, KERNEL_SITES[name])
        return out

    def batch_norm_events(self, args):
        """kernels.batch_norm_backward's events for a
        native_batch_norm_backward on the GPU that takes the unfused
        path of batch_norm_backward_cuda, or None (the fused kernel:
        a reduction, grad_input wanted, an input that
        batch_norm_use_channels_last_kernels refuses, 32-bit indexing)."""
        try:
            g, x, w, sm, si = args[0], args[1], args[2], args[5], args[6]
            train, mask = bool(args[7]), [bool(m) for m in args[9]]
            if not isinstance(x, torch.Tensor) or \
                    x.device.type != "cuda" or x.dim() < 2 or \
                    not isinstance(sm, torch.Tensor) or sm.numel() == 0 \
                    or not isinstance(si, torch.Tensor) or \
                    si.numel() == 0:
                return None

            def i32(t):
                # canUse32BitIndexMath (dense tensors)
                return t.numel() < 2 ** 31
            # (the backward has no bias: an affine norm has both)
            if train and _bn_cudnn(x, w, isinstance(w, torch.Tensor),
                                   args[3], args[4], args[8]):
                # the forward was cuDNN's (cudnn_batch_norm, whose
                # backward is cudnn_batch_norm_backward: its outputs and
                # cuDNN's own workspace, none of these)
                return None
            red = train or mask[1] or mask[2]
            if red and mask[0] and not _bn_channels_last(x) and \
                    i32(x) and i32(g):
                return None
            has_w = isinstance(w, torch.Tensor)
            cl_reduce = i32(g) and _bn_channels_last(g) and \
                _bn_channels_last(x) and \
                (not has_w or w.is_contiguous()) and sm.is_contiguous() \
                and si.is_contiguous()
            c = kernels.symsize(x.shape[1])
            return kernels.batch_norm_backward(
                c, kernels.symsize(x.numel()) // max(c, 1),
                sm.element_size(),
                w.element_size() if has_w else sm.element_size(),
                mask, has_w, train, cl_reduce)
        except Exception:
            return None

    def foreach_events(self, name, args, kwargs):
        """kernels.foreach_reduce's events for _foreach_norm or
        _foreach_max on the GPU's fast path, or None: the slow path
        (foreach_tensor_norm_slow: a linalg_vector_norm a tensor) where
        use_slowpath / can_use_fast_route send it, that is tensors of
        several devices or dtypes, not non-overlapping and dense,
        integral or complex, or a norm other than 1, 2 and inf."""
        try:
            ts = list(args[0])
            if not ts or not all(isinstance(t, torch.Tensor) for t in ts):
                return None
            t0 = ts[0]
            if t0.device.type != "cuda" or \
                    not (t0.dtype.is_floating_point or
                         (name == "_foreach_max" and
                          not t0.dtype.is_complex)):
                return None
            if any(t.device != t0.device or t.dtype != t0.dtype or
                   t.layout != torch.strided or not _dense(t) for t in ts):
                return None
            numels = [t.numel() for t in ts]
            if name == "_foreach_max":
                return kernels.foreach_reduce("max", numels,
                                              t0.element_size(),
                                              t0.element_size())
            kwargs = kwargs or {}
            p = float(args[1] if len(args) > 1 else kwargs.get("ord", 2))
            if p not in (1.0, 2.0, math.inf):
                return None
            dt = args[2] if len(args) > 2 else kwargs.get("dtype")
            dt = dt if dt is not None else t0.dtype
            size = torch.empty((), dtype=dt).element_size()
            # toOpMathType: half and bfloat16 accumulate in float
            acc = 4 if dt in (torch.float16, torch.bfloat16) else size
            return kernels.foreach_reduce(
                "norm", numels, acc, size,
                hasattr(torch.ops.aten, "_foreach_global_norm"))
        except Exception:
            return None

    def embedding_events(self, name, args):
        """(sort events, segment events) of an embedding backward with
        the sorting path, or None: embedding_dense_backward_cuda takes it
        for more than 3072 indices or scale_grad_by_freq (else one
        kernel, no temporaries); _embedding_bag_dense_backward for sum and
        mean bags."""
        try:
            g, idx = args[0], args[1]
            if not isinstance(g, torch.Tensor) or g.device.type != "cuda" \
                    or idx.dtype != torch.int64:
                return None
            if name == "embedding_dense_backward":
                nw, scale = int(args[2]), bool(args[4])
                if idx.numel() <= 3072 and not scale:
                    return None
            elif name == "_embedding_bag_backward":
                nw, mode, sparse = int(args[6]), int(args[8]), bool(args[9])
                if mode == 2 or sparse:  # max bags, sparse: other kernels
                    return None
            else:
                nw, mode = int(args[5]), int(args[7])
                if mode == 2:      # max bags: a different kernel
                    return None
            acc = 4 if g.dtype in (torch.float16, torch.bfloat16) else \
                g.element_size()
            n, d = idx.numel(), kernels.symsize(g.shape[-1])
            # the fused path: embedding_dense_backward's alone (the bags
            # pass offset2bag)
            fused = name == "embedding_dense_backward" and \
                kernels.embedding_fused(
                    n, nw, d, self.sms,
                    torch.are_deterministic_algorithms_enabled())
            return (kernels.embedding_backward("sort", n, nw, d, acc),
                    kernels.embedding_backward(
                        "segments", n, nw, d, acc, fused,
                        g.dtype in (torch.float16, torch.bfloat16)))
        except Exception:
            return None

    def run_events(self, events, keys, site):
        for ev in events:
            if ev[0] == "empty_cache":
                # an emptyCache the kernel's host code calls (cuDNN's
                # benchmark find: Dispatch.cudnn_find)
                self.rec.empty_cache()
            elif ev[0] == "alloc":
                keys[ev[1]] = object()
                self.rec.alloc(ev[2], "temporary", site, key=keys[ev[1]])
            else:
                self.rec.free(keys.pop(ev[1]))

    def _cudnn_dense(self, x, w, groups):
        """Whether a convolution of input X, weight W and GROUPS takes
        the cuDNN backend's contiguous copies as the recorder has them:
        a 2-d or 3-d one on the GPU, not grouped, sm70 or newer."""
        return isinstance(x, torch.Tensor) and x.device.type == "cuda" \
            and isinstance(w, torch.Tensor) and x.dim() in (4, 5) and \
            groups == 1 and self.major >= 7

    @staticmethod
    def _cudnn_format(x, w):
        """cudnn_conv_suggest_memory_format: channels last where the
        input or the weight is dense in it (and not also contiguous),
        else contiguous."""
        cl = torch.channels_last if x.dim() == 4 else \
            torch.channels_last_3d
        if (x.is_contiguous(memory_format=cl) and not x.is_contiguous()) \
                or (w.is_contiguous(memory_format=cl) and
                    not w.is_contiguous()):
            return cl
        return torch.contiguous_format

    def conv_copies(self, args):
        """The keys of the copies conv_copies made (see above)."""
        try:
            go, x, w = args[0], args[1], args[2]
            if _cuda_tensor(x) and x.dim() == 3:
                # convolution_backward of a 1-d convolution: its own
                # input.contiguous() (as _convolution's, Dispatch._conv),
                # the 4-d views contiguous for cuDNN after it
                if x.is_contiguous():
                    return []
                return [self.copy_of(x, "convolution_backward 1-d input "
                                     "contiguous copy")]
            if not self._cudnn_dense(x, w, args[9]) or \
                    not isinstance(go, torch.Tensor):
                return []
            fmt = self._cudnn_format(x, w)
            keys = []
            for t in (x, go):
                if not t.is_contiguous(memory_format=fmt):
                    keys.append(self.copy_of(
                        t, "cudnn convolution_backward contiguous copy"))
            return keys
        except Exception:
            return []

    def blas_workspaces(self, name, args):
        blas_workspaces(self.rec, self.ws_bytes, name, args)

    def note_all(self, flat, name):
        for t in flat:
            if type(t) is FakeTensor:
                # (no wrapper subclass: self.inner(t) is t itself on the GPU)
                if t.device.type == "cuda":
                    try:
                        s = t.untyped_storage()
                    except Exception:
                        continue
                    self.note(s, name)
                continue
            for u in self.inner(t):
                try:
                    s = u.untyped_storage()
                except Exception:
                    continue
                self.note(s, name)

    def kernel_events(self, name, args, phase, out, kwargs=None):
        """The kernel's own temporaries (kernels.py) for the device
        named; [] for ops without any (_EVENTS)."""
        ev = _EVENTS.get(name)
        if ev is None:
            return []
        try:
            return ev(self, name, args, phase, out, kwargs)
        except Exception as e:
            if self.sym is not None:
                # --symbolic: a rule that fails on symbolic sizes would
                # leave out events the recording at a value has
                self.sym.failed.append("%s's kernel rule failed on "
                                       "symbolic sizes (%s: %s)" % (
                                           name, type(e).__name__, e))
            return []

    def _ev_conv(self, name, args, phase, out, kwargs):
        if name == "convolution":
            x, w = args[0], args[1]
            st, pad, dil, tr, gr = args[3], args[4], args[5], \
                args[6], args[8]
            y = out
        else:
            go, x, w = args[0], args[1], args[2]
            st, pad, dil, tr, gr = args[4], args[5], args[6], \
                args[7], args[9]
            y = go
        if not isinstance(x, torch.Tensor) or \
                x.device.type != "cuda":
            return []
        if phase == "bias":
            # grad_bias: a sum of grad_output over all but the
            # channel dimension (convolution_backward).
            return kernels.reduce(
                tuple(y.shape), tuple(y.stride()),
                set(range(y.dim())) - {1}, y.element_size(),
                8 if y.element_size() == 8 else 4,
                kernels.symsize(y.storage_offset()), self.major, self.minor,
                self.sms)
        if x.dim() == 3 and w.dim() == 3:
            # a 1-d convolution runs as 2-d (view1d_as_2d, view4d: a
            # height of 1) on the contiguous input (Dispatch._conv)
            xs, ws, ys = ((t[0], t[1], 1, t[2]) for t in (
                tuple(x.shape), tuple(w.shape), tuple(y.shape)))
            st, pad, dil = ((1,) + tuple(st), (0,) + tuple(pad),
                            (1,) + tuple(dil))
            ev = kernels.conv(phase, xs, ws, ys, x.element_size(), st, pad,
                              dil, tr, gr, False, False, self.major,
                              self.sms)
            if torch.backends.cudnn.benchmark:
                # (cuDNN's find keyed by the 2-d view)
                ev = self.cudnn_find(phase, x, w, y, st, pad, dil, tr, gr,
                                     False, ev, (xs, ws, ys))
            return ev
        cl = torch.channels_last if x.dim() == 4 else \
            torch.channels_last_3d
        fmt_cl = x.dim() in (4, 5) and (
            (x.is_contiguous(memory_format=cl) and
             not x.is_contiguous()) or
            (w.is_contiguous(memory_format=cl) and
             not w.is_contiguous()))
        w_cl = w.dim() in (4, 5) and \
            w.is_contiguous(memory_format=cl) \
            and not w.is_contiguous()
        ev = kernels.conv(phase, tuple(x.shape), tuple(w.shape),
                          tuple(y.shape), x.element_size(), st,
                          pad, dil, tr, gr, fmt_cl, w_cl, self.major,
                          self.sms, bf16=x.dtype == torch.bfloat16,
                          heuristic=not torch.backends.cudnn.benchmark)
        fp32_nchw = phase == "forward" and x.dtype == torch.float32 and \
            x.dim() == 4 and not (fmt_cl or tr) and int(gr) == 1 and \
            self.major >= 7
        if fp32_nchw and torch.backends.cudnn.benchmark and \
                kernels.fft_covers(x.shape, w.shape, y.shape, st, dil,
                                   True):
            # a filter covering its input (a double backward's weight
            # gradient) where the plan cudnn.benchmark's find chooses is
            # cuDNN's FFT (kernels.fft_covers)
            ev = [("alloc", "ws", kernels.fft_forward(x.shape, w.shape,
                                                      pad)), ("free", "ws")]
        elif fp32_nchw and min(w.shape[2:]) >= 7 and \
                all(int(v) == 1 for v in tuple(st) + tuple(dil)) and \
                all(type(v) is int for v in tuple(x.shape) + tuple(pad)):
            # cuDNN's heuristics may give such a convolution its FFT
            # engine (about a third of the H200's shapes, kernels.py):
            # its workspace, kernels.fft_forward, noted once a shape
            key = (tuple(x.shape), tuple(w.shape), tuple(pad))
            if key not in self.fft_noted:
                self.fft_noted.add(key)
                fft = kernels.fft_forward(x.shape, w.shape, pad)
                self.rec.assume("cudnn:fft-possible", fft)
                self.rec.fft_largest = max(self.rec.fft_largest, fft)
        if torch.backends.cudnn.benchmark:
            ev = self.cudnn_find(phase, x, w, y, st, pad, dil, tr, gr,
                                 fmt_cl, ev)
        return ev

    def cudnn_find(self, phase, x, w, y, st, pad, dil, tr, gr, fmt_cl, ev,
                   shapes=None):
        """cudnn.benchmark: the first call of a key in a thread runs cuDNN's
        find before the plan it picks (run_single_conv, v8 API, the default;
        the v7 API of TORCH_CUDNN_V8_API_DISABLED is not modelled).  The key
        (CacheKeyWrapper: the descriptor, the convolution's input and weight
        sizes, memory format, dtype, padding, stride, dilation, groups,
        deterministic, allow_tf32; the pointers' alignment, which the
        caching allocator's 512-byte blocks keep at 32, left out) lives in a
        thread-local BenchmarkCache: the autograd engine's thread finds again
        what the main thread found (dcgan's H200 snapshot: its 2.7 GB find
        twice, the first step's backward of D and the next forward of G).
        get_plans_from_find -> generate_and_filter_plans allocates the
        largest workspace of the candidate plans (those within cacheInfo()'s
        largest block, at least cudaMemGetInfo's free memory), times the
        plans in it and frees it; run_single_conv then calls emptyCache
        (_cudnn_get_conv_benchmark_empty_cache(), on by default) and
        try_plans runs the fastest plan with its own workspace (EV, the
        rules of kernels.conv).  The largest candidate's workspace is
        cuDNN's own (tests/data/record/cudnn_find.tsv: 0.24 to 97 times the
        operands on the H200): the find allocates the larger of the chosen
        plan's (a candidate: the largest is at least that) and, where
        _find_fft says one is a candidate, cuDNN's FFT engine's
        (kernels.conv_find_rule), otherwise the plan's, a lower bound;
        assumption cudnn:benchmark-find either way.  SHAPES:
        the 2-d view's (input, weight, output) sizes of a 1-d
        convolution (_ev_conv), its key's."""
        xs, ws, ys = shapes or (x.shape, w.shape, y.shape)
        # the descriptor: a transposed convolution's forward is the
        # backward-data of the convolution from its output to its input
        # (and its input, the key's, that output)
        op = {"forward": "data", "data": "forward"}.get(phase, phase) \
            if tr else phase
        # (--symbolic: a size by its expression, a SymInt is unhashable;
        # kernels._symkey)
        key = (threading.get_ident(), op,
               tuple(kernels._symkey(d) for d in (ys if tr else xs)),
               tuple(kernels._symkey(d) for d in ws), fmt_cl,
               x.dtype, tuple(st), tuple(pad), tuple(dil), int(gr),
               bool(torch.backends.cudnn.deterministic or
                    torch.are_deterministic_algorithms_enabled()),
               bool(torch.backends.cudnn.allow_tf32))
        if key in self.cudnn_found:
            return ev
        self.cudnn_found.add(key)
        self.rec.assume("cudnn:benchmark-find")
        if int(gr) != 1 or len(xs) not in (4, 5) or self.major < 7:
            # grouped and depthwise convolutions (cuDNN's or the native
            # depthwise kernel: not modelled) and devices before sm70:
            # the assumption only
            return ev
        # (kernels.conv's events are a workspace of more than 0 bytes or
        # none: tested by ev, not by its size, which under --symbolic may
        # hold a rule's call that no guard may test, kernels.RULES)
        size = ev[0][2] if ev else 0
        fft = self._find_fft(op, xs, ws, ys, x.dtype, st, pad, dil, tr,
                             fmt_cl, shapes is not None)
        if fft is not None and not self._find_fits(fft):
            fft = None
        if fft is not None:
            size = kernels.conv_find(size, *fft)
        # (an FFT candidate's size is never 0)
        find = [("alloc", "find", size), ("free", "find")] \
            if ev or fft is not None else []
        if getattr(torch._C, "_cuda_get_conv_benchmark_empty_cache",
                   lambda: True)():
            find.append(("empty_cache",))
        return find + ev

    def _find_fits(self, fft):
        """Whether the FFT candidate of _find_fft's arguments FFT is one
        of the find's: generate_and_filter_plans keeps the plans whose
        workspace is at most get_available_workspace(), the caching
        allocator's cacheInfo(): the largest cached block, at least
        cudaMemGetInfo's free memory, here the device's memory less its
        CUDA context and the blocks the recording holds (its cached ones
        free for the find).
        A 1-d convolution's FFT over a long sequence asks hundreds of GB
        (HiFi-GAN's discriminator, 1024 channels of 128 samples: 563
        GB), and cuDNN leaves it out.  Under --symbolic, where a size is
        symbolic, the candidate is kept."""
        if not all(type(a) is int for a in fft):
            return True
        dev = self.opt.device
        free = devices.DEVICES[dev][3] - devices.CONTEXT_BYTES[dev] - \
            self.rec.blocks
        return kernels.conv_find_rule(0, *fft) <= free

    @staticmethod
    def _find_fft(op, xs, ws, ys, dtype, st, pad, dil, tr, fmt_cl, one_d):
        """The arguments of kernels.conv_find_rule but the plan (None:
        none) where cuDNN's FFT engines are among a find's candidates,
        as measured on the H200 (tests/data/record/cudnn_find.tsv; a
        recording of show-attend-tell's ResNet-101 encoder equal to its
        real run's peak): an fp32 2-d convolution of stride 1,
        backward-weight (kernels.fft_weight: 1x1 to 5x5 kernels, any
        padding), a "same" convolution's backward-data of a kernel of 3
        or more (kernels.fft_data: not a candidate of the 1x1 or dcgan's
        4x4 finds) or NCHW forward (kernels.fft_forward, 1x1 kernels
        too; not a candidate of dcgan's 4x4 to 1x1), in the descriptor's
        shapes XS, WS, YS (a transposed convolution's input is its
        output); channels_last adds kernels.conv's transposed operands.
        At stride 2, backward-data with a kernel of 3 or more: the four
        phases' tiled FFT (kernels.fft_data_strided; not a candidate of
        1x1 finds, nor of some wide layers of a few thousand positions,
        kernels.strided_fft_candidate), channels_last as NCHW.  ONE_D:
        a 1-d convolution, its shapes the 2-d view's (height 1): the
        same forward and backward-weight FFTs (HiFi-GAN's discriminators
        on the H100, the 36,008,099,840 and 35,435,642,880 bytes of a
        1024-channel kernel-5 layer of 33 samples, 9,198,120,960 and
        2,317,365,248 of the kernel-3 1024 -> 1 layer at 128 and 65, to
        the byte), kernels of 3 or more (those measured), no tiled
        backward-data."""
        if len(xs) != 4 or dtype != torch.float32 or \
                any(int(v) != 1 for v in dil):
            return None
        r, s = (int(v) for v in ws[2:])
        ph, pw = (int(v) for v in pad)
        stride = tuple(int(v) for v in st)
        same = r % 2 and s % 2 and (ph, pw) == (r // 2, s // 2)
        if stride == (2, 2) and op == "data" and min(r, s) >= 3:
            code = 4
        elif stride != (1, 1):
            return None
        elif op == "weight":
            code = 1
        elif op == "data" and same and min(r, s) >= 3:
            code = 2
        elif op == "forward" and not fmt_cl and (same or (
                not tr and kernels.fft_covers(xs, ws, ys, stride, dil,
                                              False))):
            # (a filter covering its input, a double backward's weight
            # gradient: the FFT among the find's candidates where
            # kernels.fft_covers says)
            code = 3
        else:
            return None
        if one_d and (code not in (1, 3) or s < 3):
            return None
        xd = ys if tr else xs
        dims = (xd[0], xd[1], ws[0], xd[2], xd[3])
        if code == 4 and all(type(d) is int for d in dims) and \
                not kernels.strided_fft_candidate(*dims, r):
            # (a wide layer of a few thousand positions: cuDNN's
            # heuristics give no such engine; under --symbolic
            # kernels.conv_find_rule decides)
            return None
        return (code, xd[0], xd[1], ws[0], xd[2], xd[3], r, s, ph,
                pw, int(bool(fmt_cl)))

    def _ev_reduce(self, name, args, phase, out, kwargs):
        x = args[0] if args else None
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda":
            return []
        # make_reduction_from_out_ty (sum_out, mean_out): the kernel
        # reads self.to(out's dtype), a copy made after the output and
        # freed on return, unless the dtypes agree or it is half or
        # bfloat16 into float (gpu_lowp_to_f32): a bool mask summed
        # into int64 copies the mask as int64.
        shape, strides = tuple(x.shape), tuple(x.stride())
        dtype, offset = x.dtype, kernels.symsize(x.storage_offset())
        pre, post = [], []
        if isinstance(out, torch.Tensor) and out.dtype != dtype and \
                not (dtype in (torch.float16, torch.bfloat16) and
                     out.dtype == torch.float32):
            pre = [("alloc", "self", kernels.symsize(x.numel()) *
                    out.element_size())]
            post = [("free", "self")]
            # (preserve_format: a dense input's strides, else contiguous)
            if not _dense(x):
                strides = contiguous_strides(shape)
            dtype, offset = out.dtype, 0
        if not dtype.is_floating_point or not shape:
            return pre + post
        dims = args[1] if len(args) > 1 and \
            isinstance(args[1], (list, tuple)) else []
        red = {int(d) % len(shape) for d in dims} or set(range(len(shape)))
        size = out.element_size() if pre else x.element_size()
        return pre + kernels.reduce(
            shape, tuple(strides), red, size, 8 if size == 8 else 4,
            offset, self.major, self.minor, self.sms) + post

    def _ev_sort(self, name, args, phase, out, kwargs):
        x = args[0] if args else None
        if not isinstance(x, torch.Tensor) or \
                x.device.type != "cuda":
            return []
        kwargs = kwargs or {}
        if name == "sort":
            dim = kwargs.get("dim", args[1] if len(args) > 1 and
                             isinstance(args[1], int) else -1)
            if x.dim() == 0:
                return []
            dense = _dense(x) and \
                x.stride(dim % x.dim()) == 1
            return kernels.sort(tuple(x.shape), dense, dim,
                                x.element_size())
        ns = args[1] if len(args) > 1 else kwargs.get("num_samples")
        rp = args[2] if len(args) > 2 else \
            kwargs.get("replacement", False)
        return kernels.multinomial(
            tuple(x.shape), x.element_size(), int(ns), bool(rp),
            out.numel() if isinstance(out, torch.Tensor) else 0)

    def _ev_randperm(self, name, args, phase, out, kwargs):
        # randperm_out_cuda: the result, then the arange, keys and cub
        # storage of its radix sort (kernels.randperm)
        if not _cuda_tensor(out) or out.dim() != 1:
            return []
        return kernels.randperm(kernels.symsize(out.numel()),
                                out.element_size())

    def _ev_index_put(self, name, args, phase, out, kwargs):
        # _index_put_impl_(self, indices, values, accumulate, unsafe)
        # with accumulate: kernels.index_put_accumulate.
        kwargs = kwargs or {}
        x = args[0] if args else None
        acc = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda" or \
                len(args) < 3:
            return []
        v = args[2]
        idx = [i for i in args[1] if i is not None]
        # a single bool or byte mask: expandTensors takes mask.nonzero()
        # (_mask_nonzero; None for other indices)
        nz = _mask_nonzero(x, args[1], v, self.sms)
        if not acc:
            # x[mask] = values (values not one element: masked_fill's
            # case, canDispatchToMaskedFill, is not this op): index_put's
            # make_info takes mask.nonzero(), freed when the op returns,
            # after the kernel; the sort kernel's path (deterministic
            # algorithms) is not modelled
            if nz is not None:
                return nz[0] + nz[1]
            # x[i] = values with int32 indices: make_info's int64 copy
            # of each, of the indices' broadcast shape (Dispatch.
            # _index_devices), made before the kernel and freed when the
            # op returns
            if not idx or any(i.dtype in (torch.bool, torch.uint8) or
                              i.device != x.device for i in idx):
                return []
            n = _index_count(idx)
            longs = ["long%d" % j for j, i in enumerate(idx)
                     if i.dtype == torch.int32]
            return [("alloc", k, n * 8) for k in longs] + \
                [("free", k) for k in reversed(longs)]
        vcopy = 0 if not isinstance(v, torch.Tensor) or \
            v.is_contiguous() else kernels.symsize(v.numel()) * \
            v.element_size()
        scopy = 0 if x.is_contiguous() else \
            kernels.symsize(x.numel()) * x.element_size()
        if nz is not None:
            # a mask (index's backward, IndexBackward0, of x[mask]):
            # makeLinearIndex's expandTensors takes mask.nonzero() first,
            # its columns the indices, freed when makeLinearIndex returns
            return kernels.index_put_accumulate(
                nz[2], idx[0].dim(), vcopy, scopy, expand=nz)
        if not idx or any(i.dtype not in (torch.long, torch.int)
                          for i in idx):
            return []
        # int32 indices: makeLinearIndex converts each to int64
        # (i.to(kLong)) after expandTensors and before expand_outplace,
        # a long copy of the index's own shape, freed, first to last,
        # when makeLinearIndex returns with the linear index
        longs = [(j, kernels.symsize(i.numel()))
                 for j, i in enumerate(idx) if i.dtype == torch.int32]
        expand = None if not longs else (
            [("alloc", "long%d" % j, n * 8) for j, n in longs],
            [("free", "long%d" % j) for j, n in longs])
        return kernels.index_put_accumulate(_index_count(idx), len(idx),
                                            vcopy, scopy, expand=expand)

    def _ev_cum(self, name, args, phase, out, kwargs):
        # cumsum_out / cumprod_out (impl_func_cum_ops) pass the kernel
        # self.to(result's dtype): a copy when they differ (a bool or
        # int32 mask summed into int64), made after the result and
        # freed on return.
        # The scan itself: kernels.cumsum (cub's storage for a tensor
        # whose only non-unit dimension is the scanned one).
        x = args[0] if args else None
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda" or \
                not isinstance(out, torch.Tensor) or x.dim() == 0 or \
                x.numel() == 0:
            return []
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        n = kernels.symsize(x.numel())
        scan = kernels.cumsum(n, kernels.symsize(x.shape[dim % x.dim()]))
        if out.dtype == x.dtype:
            return scan
        return [("alloc", "self", n * out.element_size())] + scan + \
            [("free", "self")]

    def _ev_masked_scatter(self, name, args, phase, out, kwargs):
        # masked_scatter_ (and masked_scatter, whose output is self and
        # mask broadcast together, expand_outplace, and self's clone
        # scattered into in place): kernels.masked_scatter, the mask as
        # expand_inplace broadcasts it to that shape
        kwargs = kwargs or {}
        x = out if name == "masked_scatter" else args[0] if args else None
        mask = args[1] if len(args) > 1 else kwargs.get("mask")
        src = args[2] if len(args) > 2 else kwargs.get("source")
        if not _cuda_tensor(x) or not isinstance(mask, torch.Tensor) or \
                not isinstance(src, torch.Tensor):
            return []
        n = kernels.symsize(x.numel())
        m = mask.expand(x.shape)
        mcopy = 0 if m.is_contiguous() else n * mask.element_size()
        scopy = 0 if src.is_contiguous() else \
            kernels.symsize(src.numel()) * src.element_size()
        return kernels.masked_scatter(n, mcopy, scopy)

    def _ev_svd(self, name, args, phase, out, kwargs):
        # _linalg_svd_out (BatchLinearAlgebra.cpp) on CUDA, after its
        # outputs (Dispatch._svd): info, zeros of the batch's shape
        # (int32); svd_kernel's svd_cusolver
        # (cuda/linalg/BatchLinearAlgebraLib.cpp), by driver:
        # - gesvdj (the default): A's column-major clone
        #   (cloneBatchedColumnMajor), freed when the driver returns;
        #   for m, n <= 32 gesvdjBatched, whose kernel assumes
        #   full_matrices (a square U_ for m > n, V_ for m < n, without
        #   full_matrices), otherwise gesvdj with its workspace
        #   (gesvdj_bufferSize: not recorded); without compute_uv
        #   (svdvals) both make stand-ins for U and V from the caching
        #   allocator (m x m and n x n batched, m x k and n x k).
        #   The convergence check reads info on the host (infos.cpu());
        #   a matrix gesvdj did not converge on is redone by gesvd,
        #   which no rule gives (values).
        # - gesvd: the clone of A, or of A^H for m < n; its workspace
        #   (not recorded), rwork (min(m, n) reals) and, with
        #   compute_uv, Vh_workspace (min(m, n) square).
        # - gesvda: the clone of A or A^H; without compute_uv U and V
        #   stand-ins (m x n and n x n batched); its workspace (not
        #   recorded).
        # Then _linalg_check_errors' bools (_check_errors), then info.
        # The libraries' workspaces: one assumption linalg:workspace a
        # call.
        a = dict(zip(("A", "full_matrices", "compute_uv", "driver"), args),
                 **(kwargs or {}))
        A = a.get("A")
        if not _cuda_tensor(A) or A.dim() < 2 or A.numel() == 0:
            return []
        # (the schema's defaults: full_matrices=False, compute_uv=True)
        full = bool(a.get("full_matrices", False))
        uv = bool(a.get("compute_uv", True))
        driver = a.get("driver")
        m, n = kernels.symsize(A.shape[-2]), kernels.symsize(A.shape[-1])
        k = min(m, n)
        count = kernels._prod(A.shape[:-2])
        es = A.element_size()
        real = es // 2 if A.is_complex() else es
        ev = [("alloc", "info", 4 * count),
              ("alloc", "A", count * m * n * es)]
        held = []
        if driver == "gesvd":
            # apply_svd_cusolver_gesvd on A or A^H: rows >= columns, so
            # its n (the columns) is k and Vh_workspace k x k either way
            self.rec.assume("linalg:workspace")
            held.append(("rwork", k * real))
            if uv:
                held.append(("Vh", k * k * es))
        elif driver == "gesvda":
            if not uv:
                held += [("U", count * max(m, n) * k * es),
                         ("V", count * k * k * es)]
            self.rec.assume("linalg:workspace")
        elif m <= 32 and n <= 32:
            # svd_cusolver_gesvdjBatched's U_ / V_, then
            # apply_svd_cusolver_gesvdjBatched's stand-ins (no
            # workspace)
            if uv and not full and m != n:
                held.append(("full", count * max(m, n) ** 2 * es))
            if not uv:
                held += [("U", count * m * m * es), ("V", count * n * n * es)]
        else:
            if not uv:
                held += [("U", m * k * es), ("V", n * k * es)]
            self.rec.assume("linalg:workspace")
        ev += [("alloc", t, b) for t, b in held]
        ev += [("free", t) for t, _ in reversed(held)]
        ev += [("free", "A")] + _check_errors(count) + [("free", "info")]
        return ev

    def _ev_copy(self, name, args, phase, out, kwargs):
        # A host tensor to the GPU with non_blocking and another dtype:
        # copy_kernel_cuda converts on the GPU (copy_requires_
        # temporaries), so the host's values go first to a GPU tensor of
        # their own dtype, freed on return (a blocking copy converts on
        # the host).
        x = args[0] if args else None
        if isinstance(x, torch.Tensor) and x.device.type == "cuda" and \
                isinstance(out, torch.Tensor) and out.device.type == "cpu":
            return self._ev_to_host(x, out, bool((kwargs or {}).get(
                "non_blocking")))
        if not isinstance(x, torch.Tensor) or x.device.type != "cpu" or \
                not isinstance(out, torch.Tensor) or \
                out.device.type != "cuda" or out.dtype == x.dtype or \
                not (kwargs or {}).get("non_blocking") or out.numel() == 0:
            return []
        return [("alloc", "src", out.numel() * x.element_size()),
                ("free", "src")]

    def _ev_to_host(self, x, out, non_blocking):
        # A GPU tensor to the host (_to_copy: .cpu(), .to("cpu", dtype)).
        # _to_copy's host result keeps a dense source's strides
        # (empty_strided), so the TensorIterator over the two is
        # contiguous; copy_requires_temporaries then asks for
        # temporaries when the dtypes differ or the source is not
        # dense.  copy_kernel_cuda's temporaries: blocking, the source
        # made contiguous on the GPU (src.expand_as(dst).contiguous(),
        # the conversion done on the host); non_blocking, the source
        # converted on the GPU first (src.to(dst's dtype), a dense
        # source's strides kept), then made contiguous, the conversion
        # freed once the contiguous copy is made; both freed on return
        # (torchvision's save_image: grid.mul(255)...permute(1, 2, 0)
        # .to("cpu", torch.uint8) copies the permuted float grid).
        n = x.numel()
        if n == 0:
            return []
        dense = _dense(x)
        same = out.dtype == x.dtype
        if same and dense and tuple(out.stride()) == tuple(x.stride()):
            return []
        if not non_blocking:
            return [] if x.is_contiguous() else \
                [("alloc", "src", n * x.element_size()), ("free", "src")]
        ev = []
        contig = x.is_contiguous()
        if not same:
            ev.append(("alloc", "conv", n * out.element_size()))
            # a non-dense source converts to a contiguous tensor
            contig = contig or not dense
        if not contig:
            ev.append(("alloc", "src", n * out.element_size()))
        if not same:
            ev.append(("free", "conv"))
        if not contig:
            ev.append(("free", "src"))
        return ev

    def _ev_softmax_copies(self, name, args, phase, out, kwargs):
        # host_softmax (softmax_cuda_out, log_softmax_cuda_out) runs on
        # input_.contiguous(), made after the structured kernel's output
        # and freed on return: a copy of a non-contiguous input (logits
        # transposed for cross_entropy's class dimension).
        # host_softmax_backward (log_softmax_backward_cuda_out) likewise
        # copies grad_ and then output_, after grad_input.
        ts = args[:2] if name == "_log_softmax_backward_data" else args[:1]
        if not ts or not all(_cuda_tensor(t) for t in ts) or \
                ts[0].numel() == 0:
            return []
        ev, keys = [], []
        for i, t in enumerate(ts):
            if not t.is_contiguous():
                ev.append(("alloc", i, t.numel() * t.element_size()))
                keys.append(i)
        return ev + [("free", k) for k in reversed(keys)]

    def _ev_complex_to_float(self, name, args, phase, out, kwargs):
        # abs and angle of a complex tensor (unary_op_impl_with_complex_
        # to_float_out): the kernel runs complex -> complex into a
        # complex_result of the input's size, made after the real output
        # and freed on return once its real part is copied out
        # (gateloop-transformer's a.abs(), a.angle(), and angle's
        # backward's self.abs(), on the H200)
        x = args[0] if args else None
        if not _cuda_tensor(x) or not x.is_complex() or \
                not isinstance(out, torch.Tensor) or out.is_complex() or \
                x.numel() == 0:
            return []
        return [("alloc", "complex_result", x.numel() * x.element_size()),
                ("free", "complex_result")]

    def _ev_fft_c2r(self, name, args, phase, out, kwargs):
        # _fft_c2r_cufft (cuda/SpectralOps.cpp): "Complex to real FFTs
        # may overwrite the input buffer, so must always clone
        # (gh-34551)": after the real output, self.clone(Contiguous) (or,
        # on the path for more than three dimensions or dims starting
        # (0, 1), the C2C transforms' output of the same size), freed
        # when the function returns.  irfft and the backward of rfft's
        # callers (safari's Hyena fftconv: the convolution's irfft of
        # u_f * k_f).  On the one-plan path _exec_fft then lays the
        # clone out for its plan (_fft_exec_input: FourCastNet's irfft2
        # over dims (1, 2) of a (B, H, W, C) batch copies it again).
        # cuFFT's own work area (at::empty of the plan's
        # workspace_size(), cufftGetSize's) is cuFFT's choice, left out.
        x = args[0] if args else None
        if not _cuda_tensor(x) or not x.is_complex() or \
                not isinstance(out, torch.Tensor) or x.numel() == 0:
            return []
        size = kernels.symsize(x.numel()) * x.element_size()
        dim = kernels.fft_dims(x, args[1] if len(args) > 1 else
                        kwargs.get("dim"))
        ev = [("alloc", "c2r input clone", size)]
        shape = tuple(x.shape)
        if dim is not None and kernels.fft_one_plan(dim):
            extra = _fft_exec_input(shape, contiguous_strides(shape), dim,
                                    x.element_size(), x.dtype)
            if extra:
                ev += [("alloc", "c2r input layout", extra),
                       ("free", "c2r input layout")]
        return ev + [("free", "c2r input clone")]

    def _ev_fft_r2c_c2c(self, name, args, phase, out, kwargs):
        # _fft_r2c_cufft and _fft_c2c_cufft (cuda/SpectralOps.cpp) on
        # their one-plan path (use_optimized_cufft_path for r2c: at most
        # three dims, not starting (0, 1); c2c: at most three dims):
        # after the output, r2c clones an input not over-aligned as a
        # complex one (an odd storage offset), then _exec_fft lays the
        # input out for its plan (_fft_exec_input), a copy freed when it
        # returns: FourCastNet's AFNO2D, rfft2 over dims (1, 2) of a
        # (B, H, W, C) batch, and its backward's c2c.  BFloat16 input
        # (its own proxy path), the multi-plan paths' buffers and
        # cuFFT's work area are left out.
        x = args[0] if args else None
        if not _cuda_tensor(x) or not isinstance(out, torch.Tensor) or \
                x.numel() == 0 or x.dtype == torch.bfloat16 or \
                (name == "_fft_r2c") == x.is_complex():
            return []
        dim = kernels.fft_dims(x, args[1] if len(args) > 1 else
                        kwargs.get("dim"))
        if dim is None or len(dim) > kernels.CUFFT_MAX_NDIM or \
                (name == "_fft_r2c" and not kernels.fft_one_plan(dim)):
            return []
        shape, strides = tuple(x.shape), tuple(x.stride())
        if type(x.storage_offset()) is not int:
            return []
        ev, frees = [], []
        if name == "_fft_r2c" and x.storage_offset() % 2:
            # working_tensor = self.movedim(last_dim, -1)
            #     .clone(Contiguous).movedim(-1, last_dim)
            ev.append(("alloc", "r2c aligned input",
                       kernels.symsize(x.numel()) * x.element_size()))
            frees.append(("free", "r2c aligned input"))
            last = dim[-1]
            order = [d for d in range(len(shape)) if d != last] + [last]
            moved = contiguous_strides(tuple(shape[d] for d in order))
            strides = [0] * len(shape)
            for i, d in enumerate(order):
                strides[d] = moved[i]
            strides = tuple(strides)
        if name == "_fft_c2c":
            # _fft_c2c_cufft sorts the dims by stride, largest first
            dim = tuple(sorted(dim, key=lambda d: -strides[d]))
        extra = _fft_exec_input(shape, strides, dim, x.element_size(),
                                x.dtype)
        if extra:
            ev += [("alloc", "fft input layout", extra),
                   ("free", "fft input layout")]
        return ev + frees

    def _ev_topk(self, name, args, phase, out, kwargs):
        # topk_out_cuda: launch_gather_topk_kernel selects from
        # self.contiguous(), a copy of a non-contiguous input made after
        # the structured kernel's values and indices and freed when it
        # returns (lucidrains' routing-transformer takes the top tokens of
        # each cluster along the sequence of an einsum's permuted output).
        # Not on should_use_sort's path (at most 10 slices of 100000 or
        # more: a whole sort) or for k == 0.  The multi-block selection's
        # own small buffers (some 1 KiB a slice) and the sort of more
        # than 4096 results (sort_out into copies, then a gather) are
        # left out.
        kwargs = kwargs or {}
        x = args[0] if args else None
        if not _cuda_tensor(x) or x.dim() == 0 or x.is_contiguous():
            return []
        k = args[1] if len(args) > 1 else kwargs.get("k")
        dim = args[2] if len(args) > 2 else kwargs.get("dim", -1)
        size = x.shape[dim % x.dim()]
        if k == 0 or size == 0 or (x.dtype != torch.bool and
                                   x.numel() // size <= 10 and
                                   size >= 100000):
            return []
        return [("alloc", "input", x.numel() * x.element_size()),
                ("free", "input")]

    def _ev_softmax_backward(self, name, args, phase, out, kwargs):
        g, y = args[0], args[1]
        if not isinstance(g, torch.Tensor) or \
                g.device.type != "cuda":
            return []
        dt = torch.result_type(g, y)
        size = torch.empty((), dtype=dt).element_size()
        ev = kernels.softmax_backward(g.numel(), size)
        if ev and not _product_contiguous(g, y, dt):
            # host_softmax_backward runs on grad_.contiguous() of tmp =
            # grad * output, which TensorIterator lays out as the
            # gradient (its first operand) where that is permuted (an
            # einsum's gradient): a copy, freed before tmp
            ev = ev[:1] + [("alloc", "tmp.contiguous()", g.numel() * size),
                           ("free", "tmp.contiguous()")] + ev[1:]
        return ev

    def _ev_loss(self, name, args, phase, out, kwargs):
        # mse_loss_out and its kin (Loss.cpp): with a reduction,
        # the elementwise loss goes to a TensorIterator temporary
        # that at::mean_out / sum_out then reduces (its
        # gpu_reduce_kernel buffers), freed on return.
        x, t = args[0], args[1]
        red = args[2] if len(args) > 2 else 1   # Mean
        if not isinstance(x, torch.Tensor) or \
                x.device.type != "cuda" or red == 0:
            return []
        shape = tuple(torch.broadcast_shapes(x.shape, t.shape))
        dt = torch.result_type(x, t)
        isz = torch.empty((), dtype=dt).element_size()
        n = 1
        strides = []
        for d in reversed(shape):
            strides.insert(0, n)
            n *= kernels.symsize(d)
        ev = [("alloc", "loss", n * isz)]
        if shape:
            ev += kernels.reduce(
                shape, tuple(strides), set(range(len(shape))), isz,
                8 if isz == 8 else 4, 0, self.major, self.minor, self.sms)
        return ev + [("free", "loss")]

    def _ev_group_norm(self, name, args, phase, out, kwargs):
        bw = name == "native_group_norm_backward"
        x = args[1] if bw else args[0]
        if not isinstance(x, torch.Tensor) or \
                x.device.type != "cuda":
            return []
        n, c, hxw, g = (kernels.symsize(v) for v in
                        (args[5:9] if bw else args[3:7]))
        acc = 8 if x.dtype == torch.float64 else 4
        if bw:
            mask = args[9]
            return kernels.group_norm(
                "backward", n, c, hxw, g, acc,
                isinstance(args[4], torch.Tensor), bool(mask[0]))
        return kernels.group_norm(
            "forward", n, c, hxw, g, acc,
            any(isinstance(a, torch.Tensor) for a in args[1:3]),
            False)

    def _ev_batch_norm(self, name, args, phase, out, kwargs):
        """A training-mode native_batch_norm's staging buffers
        (kernels.batch_norm_forward) where the GPU takes batch_norm_cuda
        (not cuDNN: _bn_cudnn) and batch_norm_choose_impl's ChannelsLast
        (32-bit indexing; _bn_channels_last)."""
        a = list(args) + [None] * (8 - len(args))
        names = ("input", "weight", "bias", "running_mean", "running_var",
                 "training", "momentum", "eps")
        for i, k in enumerate(names):
            if kwargs and k in kwargs:
                a[i] = kwargs[k]
        x, w, b, rm, rv, train, eps = a[0], a[1], a[2], a[3], a[4], \
            a[5], a[7]
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda" \
                or x.dim() < 2 or not train:
            return []
        n = kernels.symsize(x.numel())
        if _bn_cudnn(x, w, isinstance(b, torch.Tensor), rm, rv, eps) or \
                n >= 2 ** 31:
            return []
        if not _bn_channels_last(x):
            return []
        c = kernels.symsize(x.shape[1])
        acc = 8 if x.dtype == torch.float64 else 4
        return kernels.batch_norm_forward(c, n // max(c, 1), acc)

    def _ev_attention(self, name, args, phase, out, kwargs):
        kind = SDPA_KERNELS[name]
        q = args[1] if kind[1] else args[0]
        if not isinstance(q, torch.Tensor) or q.device.type != "cuda" \
                or q.dim() != 4:
            return []
        if not kind[1]:
            return kernels.attention_forward(kind[0])
        b, h, sq, d = (kernels.symsize(v) for v in q.shape)
        # the keys' length and the values' head dimension (key, value
        # follow the query), the keys' heads (fewer with enable_gqa), and
        # dropout_p (efficient: after the philox seed and offset; flash:
        # after max_q and max_k)
        k = args[2]
        sk, dv = kernels.symsize(k.shape[2]), \
            kernels.symsize(args[3].shape[3])
        hkv = kernels.symsize(k.shape[1])
        at = {"efficient": 9, "flash": 10}.get(kind[0])
        p = 0.0 if at is None else \
            args[at] if len(args) > at else kwargs.get("dropout_p", 0.0)
        return kernels.attention_backward(
            kind[0], b, h, sq, d, q.element_size(), sk=sk, dv=dv,
            dropout=bool(p), hkv=hkv,
            deterministic=kernels.deterministic_strict(torch), sms=self.sms)

    def _ev_attention_kernel(self, name, args, phase, out, kwargs):
        """The kernels' own backward ops, called directly (a jagged
        nested tensor's attention, jagged_scaled_dot_product_attention:
        the dense _scaled_dot_product_* ops call them inside their C++):
        their tensors are (batch, sequence, heads, dim), and with
        cumulative sequence lengths (varlen) a batch of one holding every
        sequence.  _flash_attention_backward's mha_varlen_bwd pads each
        sequence's rows for softmax_d and dq_accum, total + 128 x batch
        rows where the dense kernel has batch x pad128(seqlen)."""
        q, k, v = args[1], args[2], args[3]
        if not isinstance(q, torch.Tensor) or q.device.type != "cuda":
            return []
        cu = args[6] if len(args) > 6 else None
        if q.dim() == 3:        # varlen: (total, heads, dim)
            q, k, v = (t.unsqueeze(0) for t in (q, k, v))
        if q.dim() != 4:
            return []
        b, sq, h, d = (kernels.symsize(x) for x in q.shape)
        sk, hkv = kernels.symsize(k.shape[1]), kernels.symsize(k.shape[2])
        dv = kernels.symsize(v.shape[3])
        if name == "_flash_attention_backward":
            p = args[10] if len(args) > 10 else kwargs.get("dropout_p", 0.0)
            det = kernels.deterministic_strict(torch)
            if isinstance(cu, torch.Tensor):
                nb = kernels.symsize(cu.shape[0]) - 1
                return kernels.flash_backward_rows(
                    b * sq + 128 * nb, h, d,
                    kernels.flash_split_splits(nb, h, self.sms) if det
                    else 1)
            return kernels.attention_backward("flash", b, h, sq, d,
                                              q.element_size(), sk=sk,
                                              dv=dv, dropout=bool(p),
                                              hkv=hkv, deterministic=det,
                                              sms=self.sms)
        p = args[11] if len(args) > 11 else kwargs.get("dropout_p", 0.0)
        ws = None
        if isinstance(cu, torch.Tensor):
            # varlen: the kernel's batch is the sequences and its
            # lengths the longest ones (max_seqlen_q, max_seqlen_k)
            ws = (kernels.symsize(cu.shape[0]) - 1,
                  kernels.symsize(args[8]), kernels.symsize(args[9]))
        return kernels.attention_backward(
            "efficient", b, h, sq, d, q.element_size(), sk=sk, dv=dv,
            dropout=bool(p), hkv=hkv, ws_shape=ws,
            deterministic=kernels.deterministic_strict(torch))

    def copy_of(self, t, site):
        """A kernel's copy of T (its `.contiguous()`), a temporary of
        T's bytes at SITE; returns the key rec.free takes."""
        key = object()
        self.rec.alloc(t.numel() * t.element_size(), "temporary", site,
                       key=key)
        return key

    def temps(self, name, events):
        """Allocations through the fake allocator, freed in the order
        the kernel frees them: category temporary, site the kernel."""
        self.run_events(events, {}, KERNEL_SITES.get(name, name))

    def inner(self, t):
        """The CUDA tensors that hold T's memory.  A wrapper subclass
        (DTensor: a sharded parameter, its gradient and optimizer state)
        owns none: its inner tensors do, made by ops that run inside the
        subclass's dispatch, under the fake mode but not above it."""
        if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
            return
        if is_traceable_wrapper_subclass(t):
            for a in t.__tensor_flatten__()[0]:
                yield from self.inner(getattr(t, a))
        else:
            yield t

    def note(self, s, name):
        key = id(s)
        if key in self.rec.retired:
            return
        nb = s.nbytes()
        ent = self.rec.live.get(key)
        if ent is not None:
            # --symbolic: one expression is equal to itself without a
            # guard (and without SymNode arithmetic through sympy)
            if ent[2] is nb or (type(nb) is not int and
                                type(ent[2]) is not int and
                                ent[2].node.expr == nb.node.expr) or \
                    ent[2] == nb:
                return
            self.rec.free(key)   # resized: the old block goes
        if nb == 0:
            return
        self.rec.alloc(nb, self.rec.category(name), self.rec.site(), key)
        self.refs[key] = weakref.ref(s, self.on_storage_death(key))
        if self.rec.phase_backward or lifecycle.autograd_thread():
            # the node whose evaluation made it (accumulates)
            tok = _node_token(_autograd_node())
            if tok is not None:
                self.born[key] = tok

    def accumulates(self, args, kwargs):
        """Whether this add is the autograd engine's accumulation of two
        gradients of one input (InputBuffer::accumulate, out of place for
        fake tensors): in backward with grad mode off, inside a node's
        evaluation, no Python frame of the program's own between (a
        custom Function's backward adds as the program says), two
        tensors of one shape and dtype, the first non-overlapping and
        dense (can_accumulate_inplace: a permuted layout too, the sum
        of a transposed gradient and a contiguous one) and owning its
        storage."""
        if kwargs or len(args) != 2 or torch.is_grad_enabled() or \
                not (self.rec.phase_backward or lifecycle.autograd_thread()):
            return False
        a, b = args
        if not isinstance(a, torch.Tensor) or \
                not isinstance(b, torch.Tensor) or \
                a.device.type != "cuda" or a.shape != b.shape or \
                a.dtype != b.dtype or not _dense(a) or \
                a.storage_offset() != 0 or \
                a.untyped_storage().nbytes() != a.numel() * a.element_size():
            return False
        node = _autograd_node()
        if node is None:
            return False
        tok = _node_token(node)
        if tok is not None and \
                self.born.get(id(a.untyped_storage())) == tok and \
                not _twice(node):
            # made by this node's own formula, and no two of the node's
            # gradients go to one input: the formula's add, not the
            # engine's (cholesky_backward's gA + gA.tril(-1).mH(),
            # atan2's self * self + other * other), out of place
            return False
        n = self.shared.get(id(a.untyped_storage()))
        if n is not None:
            # can_accumulate_inplace's adjusted_use_count(v) == 1: one
            # tensor a formula gave two inputs (an LSTMCell's two bias
            # gradients) is held by both inputs' buffers, and is added
            # out of place; the other buffer then holds the last
            # reference
            if n > 1:
                self.shared[id(a.untyped_storage())] = n - 1
                return False
            del self.shared[id(a.untyped_storage())]
        try:
            # can_accumulate_inplace: the buffer holds the last reference
            # to the storage (a gradient that shares it, a tied weight's,
            # is added out of place).  Seen from here, two references:
            # the tensor and the fake mode's own.
            if torch._C._storage_Use_Count(
                    a.untyped_storage()._cdata) > 2:
                return False
        except Exception:
            return False
        f = sys._getframe(2)
        while f is not None:
            fn = os.path.abspath(f.f_code.co_filename)
            if f.f_code.co_name == "_engine_run_backward":
                return True
            if not fn.startswith(_TORCH_DIR) and not fn.startswith(_HERE):
                return False
            f = f.f_back
        return True


# What dispatch() does by op name (an OpOverloadPacket's __name__); an op
# not named runs its fake kernel and Dispatch.outputs notes what it made.
_RUN = object()       # a _BEFORE handler's "not answered: run the op"


# the autograd node whose backward runs on this thread now (the formulas
# the handlers above recognise by name)
_autograd_node = lifecycle.autograd_node


def _dense(t):
    """Tensor.is_non_overlapping_and_dense (TensorImpl's, which Python
    does not expose): a tensor whose elements fill a block of its storage
    in some order of its dimensions; False where a size is symbolic and
    the answer would need a guard."""
    return bool(is_non_overlapping_and_dense_or_false(t))


def _node_token(node):
    """NODE's identity while its graph lives (the id of its Python
    object, which PyTorch keeps, and its sequence number), or None."""
    if node is None:
        return None
    try:
        return (id(node), node._sequence_nr())
    except Exception:
        return None


def _twice(node):
    """Whether two of NODE's next edges are one input of one node (x * x:
    MulBackward0's two gradients of x, which the engine then adds); True
    where PyTorch cannot say (the engine's add assumed, as before)."""
    seen = set()
    try:
        edges = node.next_functions
    except Exception:
        return True
    for fn, nr in edges:
        if fn is None:
            continue
        k = (id(fn), nr)
        if k in seen:
            return True
        seen.add(k)
    return False


def _prod_shape(shape):
    n = 1
    for d in shape:
        n *= d
    return n
# The backward nodes whose formula puts the gradient into its own zeros
# (Dispatch._zeros_inplace), by op.
_VALUE_SELECTING = ("MaxBackward0", "MinBackward0", "MedianBackward1",
                    "NanmedianBackward1", "KthvalueBackward0",
                    "ModeBackward0", "SortBackward0", "SortBackward1",
                    "TopkBackward0")
_ZEROS_NODES = {"scatter_add": ("GatherBackward0", "CummaxBackward0",
                                "CumminBackward0"),
                "scatter": _VALUE_SELECTING,
                "masked_scatter": ("MaskedSelectBackward0",),
                "put": ("TakeBackward0",),
                "index_add": ("IndexSelectBackward0",),
                "index_fill": ("TraceBackward0",)}
class _Plain:
    """A node taking the plain tensors' branch (Dispatch._plain_branch):
    SUPPRESS whether the branches part; BEGIN (None: at once) says which
    op is the subclass branch's first to run unrecorded, AT which op
    brings the plain branch's last input, MAKE (given that op's
    arguments) runs the rest of the plain branch; HELD the plain
    branch's locals, freed in reverse (drop); OUT its result, LAST the
    subclass branch's latest output (a weak reference)."""

    def __init__(self, node):
        self.node = node
        self.busy = False
        self.suppress = False
        self.begin = self.at = self.make = None
        self.held = []
        self.out = self.last = None

    def drop(self):
        while self.held:
            self.held.pop()


def _product_contiguous(a, b, dtype):
    """Whether a * b (fake tensors A and B of one shape) comes out
    contiguous: TensorIterator's layout (reorder_dimensions: the
    operands' strides, the first decisive), computed on meta tensors of
    their sizes and strides (under --symbolic, their hints)."""
    def concrete(t):
        vals = []
        for d in list(t.shape) + list(t.stride()):
            if type(d) is not int:
                d = getattr(getattr(d, "node", None), "hint", None)
                if d is None:
                    return None
            vals.append(int(d))
        return vals[:t.dim()], vals[t.dim():]
    ca, cb = concrete(a), concrete(b)
    if ca is None or cb is None or a.is_contiguous():
        return True
    with unset_fake_temporarily():
        ma = torch.empty_strided(ca[0], ca[1], dtype=dtype, device=_META)
        mb = torch.empty_strided(cb[0], cb[1], dtype=dtype, device=_META)
        return (ma * mb).is_contiguous()


def _check_errors(matrices):
    """_linalg_check_errors' requests: infos.any(), read on the host,
    one bool, two for a single matrix's info (the H100 made two in every
    unbatched lstsq and svd it traced: tests/recorder_lstsq_workspace.sh,
    tests/recorder_svd.sh), freed in reverse."""
    checks = ["any", "any2"] if matrices <= 1 else ["any"]
    return [("alloc", c, 1) for c in checks] + \
        [("free", c) for c in reversed(checks)]



def _fft_exec_input(shape, strides, dim, elem, dtype):
    """The bytes of the copy _exec_fft (cuda/SpectralOps.cpp) makes of
    an input of SHAPE and STRIDES transformed over DIM, 0 where none:
    the input is permuted batch dims first (sorted by stride, largest
    first), then the signal dims in DIM's order, and reshaped to (-1,
    *signal): a contiguous copy where the batch dims do not merge into
    one (a (B, H, W, C) batch of B > 1 over dims (1, 2)).  Otherwise
    CuFFTConfig clones the view where its strides have no cuFFT
    embedding (as_cufft_embed's must_clone) or, for half, where its last
    stride is not 1.  Sizes may be symbolic (--symbolic): the tests are
    then guards of PyTorch's ShapeEnv, as _exec_fft's own are."""
    nd = len(shape)
    batch = [d for d in range(nd) if d not in dim]
    batch.sort(key=lambda d: -strides[d])
    perm = batch + list(dim)
    pshape = [shape[d] for d in perm]
    pstrides = [strides[d] for d in perm]
    nb = 1
    for d in batch:
        nb *= shape[d]
    newshape = [nb] + pshape[len(batch):]
    numel = nb
    for n in newshape[1:]:
        numel *= n
    # computeStride (TensorUtils.cpp): None where no view exists
    bst = view_strides(pshape, pstrides, newshape)
    if bst is None:
        return numel * elem
    # CuFFTConfig: half's last stride; as_cufft_embed's must_clone
    if dtype in (torch.float16, torch.complex32) and bst[-1] != 1:
        return numel * elem
    last = bst[-1]
    clone = last <= 0 or (newshape[0] != 1 and bst[0] == 0)
    for i in range(len(newshape) - 1, 0, -1):
        if clone:
            break
        if newshape[i] == 1:
            continue
        if bst[i] > 0 and bst[i] % last == 0:
            last = bst[i]
        else:
            clone = True
    return numel * elem if clone else 0


def _cuda_tensor(t):
    return isinstance(t, torch.Tensor) and t.device.type == "cuda"


def _index_count(idx):
    """The elements of the index tensors IDX broadcast together
    (make_info's expand_outplace)."""
    return kernels.symsize(_prod_shape(torch.broadcast_shapes(
        *[i.shape for i in idx])))


def _mask_nonzero(x, indices, res, sms):
    """The events of expandTensors (IndexingUtils.h) for x[mask] on the
    GPU, a single bool or byte mask among INDICES (the others None), RES
    the indexing's result (or index_put's full-size values), SMS the
    device's: (before,
    after, n), before: nonzero_out_cuda's temporaries around its
    (n, mask.dim()) long output (kernels.nonzero), after: that output's
    free; n, the mask's count, is RES's indexed dimension.  None for
    other indices (several tensors, a 0-d mask) or sizes not known."""
    if not _cuda_tensor(x) or not isinstance(indices, (list, tuple)) or \
            not isinstance(res, torch.Tensor):
        return None
    ts = [(p, i) for p, i in enumerate(indices) if i is not None]
    if len(ts) != 1 or not isinstance(ts[0][1], torch.Tensor) or \
            ts[0][1].dtype not in (torch.bool, torch.uint8) or \
            ts[0][1].dim() == 0:
        return None
    p, m = ts[0]
    k = m.dim()
    sizes = list(x.shape) + list(res.shape) + [m.numel()]
    if any(type(d) is not int for d in sizes):
        # (--symbolic: a size kept symbolic, which int() would guard;
        # the nonzero left out)
        return None
    if res.dim() != x.dim() - k + 1:
        return None
    n, numel = res.shape[p], m.numel()
    if numel == 0 or (n == 1 and numel > 1):
        # (index_put's values broadcast from one element: the count
        # unknown here)
        return None
    pre, post = kernels.nonzero(numel, m.element_size(), m.is_contiguous(),
                                sms)
    return (pre + [("alloc", "mask_nonzero", n * k * 8)] + post,
            [("free", "mask_nonzero")], n)


# The fused RNN cells' values on the CPU (Dispatch._cell_values), as
# RNN.cu's kernels compute them: in float (accscalar_t), the gates
# chunked along the columns; each returns its outputs in float.
def _cell_gates(torch, ig, hg, b1, b2, n):
    g = ig.float() + hg.float()
    if b1 is not None:
        g = g + b1.float() + b2.float()
    return g.chunk(n, 1)


def _lstm_fwd(torch, ig, hg, cx, b1, b2):
    """lstm_cell_forward: (hy, cy, workspace [ig, fg, cg, og])."""
    i, f, c, o = _cell_gates(torch, ig, hg, b1, b2, 4)
    i, f, c, o = i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()
    cy = f * cx.float() + i * c
    return o * cy.tanh(), cy, torch.cat([i, f, c, o], 1)


def _lstm_bwd(torch, ghy, gcy, cx, cy, ws):
    """lstm_cell_backward: (grad_gates, grad_cx); an undefined grad_hy
    or grad_cy is 0."""
    i, f, c, o = ws.float().chunk(4, 1)
    cx, cy = cx.float(), cy.float()
    go = ghy.float() if ghy is not None else torch.zeros_like(cx)
    goc = gcy.float() if gcy is not None else torch.zeros_like(cx)
    t = cy.tanh()
    gog = go * t
    gcx = go * o * (1 - t * t) + goc
    gig = gcx * c * (1 - i) * i
    gfg = gcx * cx * (1 - f) * f
    gcg = gcx * i * (1 - c * c)
    gog = gog * (1 - o) * o
    return torch.cat([gig, gfg, gcg, gog], 1), gcx * f


def _gru_fwd(torch, ig, hg, hx, b1, b2):
    """gru_cell_forward: (hy, workspace [rg, ig, ng, hx, hn + b2n])."""
    ir, ii, inn = ig.float().chunk(3, 1)
    hr, hi, hn = hg.float().chunk(3, 1)
    if b1 is not None:
        b1r, b1i, b1n = b1.float().chunk(3)
        b2r, b2i, b2n = b2.float().chunk(3)
        r = (ir + hr + b1r + b2r).sigmoid()
        z = (ii + hi + b1i + b2i).sigmoid()
        hn = hn + b2n
        n = (inn + b1n + r * hn).tanh()
    else:
        r = (ir + hr).sigmoid()
        z = (ii + hi).sigmoid()
        n = (inn + r * hn).tanh()
    h = hx.float()
    return n + z * (h - n), torch.cat([r, z, n, h, hn], 1)


def _gru_bwd(torch, go, ws):
    """gru_cell_backward: (grad_input_gates, grad_hidden_gates,
    grad_hx)."""
    r, z, n, hx, hn = ws.float().chunk(5, 1)
    go = go.float()
    gig = go * (hx - n) * (1 - z) * z
    ghx = go * z
    gin = go * (1 - z) * (1 - n * n)
    ghn = gin * r
    grg = gin * hn * (1 - r) * r
    return torch.cat([grg, gig, gin], 1), torch.cat([grg, gig, ghn], 1), ghx


def _op_is(*names):
    return lambda d, func, args: func.overloadpacket.__name__ in names


def _grad_seen(d, func, args):
    # prod_backward's grad * (...): the first mul whose self is a
    # recorded tensor (the gradient, not one of the branch's own)
    return func.overloadpacket.__name__ == "mul" and \
        _cuda_tensor(args[0]) and \
        id(args[0].untyped_storage()) in d.rec.live


def _plain_prod(br, node):
    # prod_backward (ProdBackward0: the whole tensor; ProdBackward1:
    # along dim).  For tensor subclasses always prod_safe_zeros_backward
    # (ones, cat, cumprod, flip, ...).  On plain tensors the input's
    # zeros decide: ProdBackward0 counts them with (input == 0).nonzero()
    # (the mask freed at once, the indices at return), ProdBackward1
    # with zero_mask.sum(dim, true).sum().item() (zero_mask and
    # slice_zero_count freed at return); none: grad * (result /
    # input), the quotient freed after the product; more than one for
    # the whole tensor: zeros_like(input); else the safe path, as for
    # subclasses.
    x, res = node._saved_self, node._saved_result
    if not _cuda_tensor(x) or x.dim() == 0 or x.numel() == 0:
        return
    if node.name() == "ProdBackward0":
        mask = torch.eq(x, 0)
        zeros = torch.nonzero(mask)
        del mask
        n = zeros.shape[0]
        br.held = [zeros]
        if n > 1:
            br.suppress = True
            br.out = torch.zeros_like(x)
            br.drop()
            return
    else:
        dim = node._saved_dim % x.dim()
        if x.shape[dim] == 1:
            return
        if not node._saved_keepdim:
            res = res.unsqueeze(dim)
        mask = torch.eq(x, 0)
        count = mask.sum(dim, keepdim=True)
        n = count.sum().item()
        br.held = [mask, count]
        del mask, count
    if n != 0:
        return
    br.suppress = True
    br.at = _grad_seen

    def make(args):
        ratio = torch.div(res, x)
        out = torch.mul(args[0], ratio)
        del ratio
        return out
    br.make = make


def _plain_cumprod(br, node):
    # cumprod_backward without grad mode: w = output * grad, is_zero =
    # input == 0, then on plain tensors is_zero.any().item() and, with
    # no zeros, reversed_cumsum(w, dim).div(input) (w.flip(dim)
    # .cumsum(dim).flip(dim), the first flip and the cumsum freed
    # after the second flip, which is freed after the quotient; then
    # is_zero and w).  For tensor subclasses the masked formula (or
    # the O(n^2) one and stack) whatever the zeros.  With zeros, the
    # plain O(n) masked path is not modelled: the subclass branch's
    # result is recorded alone.
    x = node._saved_self
    if not _cuda_tensor(x) or x.numel() <= 1 or x.dim() == 0:
        return
    dim = node._saved_dim % x.dim()
    if x.shape[dim] == 1:
        return
    br.suppress = True
    br.at = _op_is("mul")

    def make(args):
        w = torch.mul(args[0], args[1])
        zero = torch.eq(x, 0)
        if zero.any().item():
            return None
        flip = torch.flip(w, [dim])
        cs = torch.cumsum(flip, dim)
        rev = torch.flip(cs, [dim])
        del cs, flip
        out = torch.div(rev, x)
        del rev, zero, w
        return out
    br.make = make


def _plain_masked_fill(br, node):
    # masked_fill_backward (the value's gradient of masked_fill with a
    # tensor value; self's, grad.masked_fill(mask, 0), comes first and
    # is the same on both): grad.masked_select(mask).sum() on plain
    # tensors, where(mask, grad, 0).sum() (a scalar_tensor zero and a
    # grad-sized where) for tensor subclasses.
    br.suppress = True
    br.begin = _op_is("scalar_tensor", "where")
    br.at = _op_is("where")

    def make(args):
        sel = torch.masked_select(args[1], args[0])
        out = torch.sum(sel)
        del sel
        return out
    br.make = make


# The formulas whose plain-tensor branch Dispatch._plain_branch takes,
# and the ops any of them may begin with but for detach (views of the
# saved tensors, prod's ones, cumprod's output * grad, masked_fill's
# two gradients).  Only at those is the current node asked: asking makes
# the node a Python object, which holds what the node holds (the
# AccumulateGrad nodes' parameters, whose detach each calls) for as long
# as it lives.
_PLAIN_FIRST = frozenset(("view", "unsqueeze", "ones", "mul", "masked_fill",
                          "scalar_tensor", "where"))
_PLAIN = {"ProdBackward0": _plain_prod, "ProdBackward1": _plain_prod,
          "CumprodBackward0": _plain_cumprod,
          "MaskedFillBackward1": _plain_masked_fill}
# The nodes whose formula combines two masks of its own
# (Dispatch._fresh_mask): evenly_distribute_backward's, clamp's.
_MASK_NODES = ("MaxBackward1", "MinBackward1", "MedianBackward0",
               "NanmedianBackward0", "ClampBackward0")
_BEFORE = {
    "_local_scalar_dense": Dispatch._item,
    "_pack_padded_sequence": Dispatch._pack_padded,
    "linalg_lstsq": Dispatch._lstsq,
    "logsumexp": Dispatch._logsumexp,
    "_use_cudnn_ctc_loss": Dispatch._use_cudnn_ctc,
    # (MIOpen's is ROCm's: no NVIDIA device takes it)
    "_use_miopen_ctc_loss": lambda self, *a: False,
    "_ctc_loss": Dispatch._ctc_loss,
    "_ctc_loss_backward": Dispatch._ctc_loss,
    "_nested_tensor_from_mask_left_aligned": Dispatch._nested_mask,
    "_nested_tensor_from_mask": Dispatch._nested_from_mask,
    "to_padded_tensor": Dispatch._to_padded,
    "_amp_foreach_non_finite_check_and_unscale_": Dispatch._amp,
    "_amp_update_scale_": Dispatch._amp,
    "add": Dispatch._add,
    "_safe_softmax": Dispatch._safe_softmax,
    "_grouped_mm": Dispatch._grouped_mm,
    "_fused_moving_avg_obs_fq_helper": Dispatch._fused_obs_fq,
    "fake_quantize_per_tensor_affine_cachemask": Dispatch._fake_quant,
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams":
        Dispatch._fake_quant,
    "fake_quantize_per_channel_affine_cachemask": Dispatch._fake_quant,
    "_fake_quantize_learnable_per_tensor_affine": Dispatch._fake_quant,
    "_fake_quantize_learnable_per_tensor_affine_backward":
        Dispatch._fake_quant,
    "_fake_quantize_learnable_per_channel_affine": Dispatch._fake_quant,
    "_fake_quantize_learnable_per_channel_affine_backward":
        Dispatch._fake_quant,
    "index": Dispatch._index_devices,
    "index_put": Dispatch._index_put,
    "index_put_": Dispatch._host_indices,
    "_index_put_impl_": Dispatch._host_indices,
    "sub": Dispatch._bce_logits_backward,
    "mul": Dispatch._bce_logits_backward,
    "scatter": Dispatch._zeros_inplace,
    "scatter_add": Dispatch._zeros_inplace,
    "masked_scatter": Dispatch._zeros_inplace,
    "put": Dispatch._zeros_inplace,
    "index_add": Dispatch._zeros_inplace,
    "index_fill": Dispatch._zeros_inplace,
    "logical_and": Dispatch._fresh_mask,
    "logical_or": Dispatch._fresh_mask,
    "median": Dispatch._median_all,
    "_thnn_fused_gru_cell": Dispatch._gru_cell,
    "_thnn_fused_gru_cell_backward": Dispatch._gru_cell,
    "_thnn_fused_lstm_cell": Dispatch._lstm_cell,
    "_thnn_fused_lstm_cell_backward_impl": Dispatch._lstm_cell,
    "nanmedian": Dispatch._median_all,
    "_transformer_encoder_layer_fwd": Dispatch._encoder_layer,
    "_native_multi_head_attention": Dispatch._native_mha,
}
_BEFORE.update((n, Dispatch._host_bool) for n in values.HOST_BOOL)
_BEFORE.update((n, Dispatch._quantize) for n in (
    "quantize_per_tensor", "quantize_per_tensor_dynamic",
    "quantize_per_channel"))
_BEFORE.update((n, Dispatch._sparse) for n in sparse.HANDLERS)


def _checked(check, then):
    """A _BEFORE handler that runs CHECK (which raises or returns _RUN),
    then THEN (the op's own handler, or None: run the op)."""
    def before(self, mode, func, name, args, kwargs):
        check(self, mode, func, name, args, kwargs)
        return _RUN if then is None else \
            then(self, mode, func, name, args, kwargs)
    return before


for _n in ("mm", "addmm"):
    # (sparse.HANDLERS has both: the dtypes are checked first)
    _BEFORE[_n] = _checked(Dispatch._mm_dtypes, _BEFORE.get(_n))
_BEFORE["convolution"] = Dispatch._conv_types

_AFTER = {
    "_to_copy": Dispatch._to_host,
    "convolution": Dispatch._conv,
    "convolution_backward": Dispatch._conv_backward,
    "_scaled_dot_product_efficient_attention_backward":
        Dispatch._efficient_backward,
    "embedding_dense_backward": Dispatch._embedding_backward,
    "_embedding_bag_backward": Dispatch._embedding_backward,
    "_embedding_bag_dense_backward": Dispatch._embedding_backward,
    "native_layer_norm": Dispatch._layer_norm,
    "native_layer_norm_backward": Dispatch._layer_norm,
    "max_pool2d_with_indices": Dispatch._max_pool,
    "max_pool2d_with_indices_backward": Dispatch._max_pool,
    "_scaled_dot_product_efficient_attention": Dispatch._efficient_forward,
    "_efficient_attention_forward": Dispatch._efficient_forward,
    "_efficient_attention_backward": Dispatch._efficient_backward,
    "mse_loss": Dispatch._loss,
    "smooth_l1_loss": Dispatch._loss,
    "binary_cross_entropy": Dispatch._bce,
    "native_dropout": Dispatch._dropout,
    "nonzero": Dispatch._nonzero,
    "_unique2": Dispatch._unique,
    "_unique": Dispatch._unique,
    "unique_consecutive": Dispatch._unique,
    "roll": Dispatch._roll,
    "masked_select": Dispatch._masked_select,
    "masked_scatter_backward": Dispatch._masked_select,
    "index": Dispatch._mask_index,
    "_scaled_dot_product_cudnn_attention": Dispatch._cudnn_attention,
    "_foreach_norm": Dispatch._foreach_reduce,
    "native_batch_norm_backward": Dispatch._batch_norm_backward,
    "binary_cross_entropy_with_logits": Dispatch._bce_logits,
    "_foreach_max": Dispatch._foreach_reduce,
    "neg": Dispatch._neg,
    "log_sigmoid_forward": Dispatch._log_sigmoid,
    "_linalg_svd": Dispatch._svd,
}
# The kernels' own temporaries (kernel_events), by op.
_EVENTS = {
    "convolution": Dispatch._ev_conv,
    "convolution_backward": Dispatch._ev_conv,
    "sum": Dispatch._ev_reduce,
    "mean": Dispatch._ev_reduce,
    "sort": Dispatch._ev_sort,
    "multinomial": Dispatch._ev_sort,
    "randperm": Dispatch._ev_randperm,
    "_softmax_backward_data": Dispatch._ev_softmax_backward,
    "topk": Dispatch._ev_topk,
    "_fft_c2r": Dispatch._ev_fft_c2r,
    "_fft_r2c": Dispatch._ev_fft_r2c_c2c,
    "_fft_c2c": Dispatch._ev_fft_r2c_c2c,
    "abs": Dispatch._ev_complex_to_float,
    "angle": Dispatch._ev_complex_to_float,
    "_softmax": Dispatch._ev_softmax_copies,
    "_log_softmax": Dispatch._ev_softmax_copies,
    "_log_softmax_backward_data": Dispatch._ev_softmax_copies,
    "cumsum": Dispatch._ev_cum,
    "_index_put_impl_": Dispatch._ev_index_put,
    "index_put_": Dispatch._ev_index_put,
    "index_put": Dispatch._ev_index_put,
    "cumprod": Dispatch._ev_cum,
    "masked_scatter": Dispatch._ev_masked_scatter,
    "masked_scatter_": Dispatch._ev_masked_scatter,
    "_linalg_svd": Dispatch._ev_svd,
    "_to_copy": Dispatch._ev_copy,
    "mse_loss": Dispatch._ev_loss,
    "smooth_l1_loss": Dispatch._ev_loss,
    "huber_loss": Dispatch._ev_loss,
    "native_group_norm": Dispatch._ev_group_norm,
    "native_group_norm_backward": Dispatch._ev_group_norm,
    "native_batch_norm": Dispatch._ev_batch_norm,
}
_EVENTS.update((n, Dispatch._ev_attention) for n in SDPA_KERNELS)
_EVENTS.update((n, Dispatch._ev_attention_kernel) for n in
               ("_flash_attention_backward", "_efficient_attention_backward"))
