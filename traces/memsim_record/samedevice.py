"""The device check of an op's CUDA kernel, as PyTorch's generated
wrappers make it.

A CUDA kernel registered by PyTorch's code generator checks that every
tensor among its out and positional arguments is on one device
(c10::impl::check_and_update_common_device, in the wrapper that
RegisterDispatchKey generates for a backend that needs a device guard),
unless the op's entry in native_functions.yaml says `device_check:
NoCheck` (the TensorIterator ops: add, mul, where, clamp_, index...).
No exception is made for a 0-dim CPU tensor, which the TensorIterator
ops take as a scalar and FakeTensorMode lets any op take
(FakeTensor's _find_common_device): `torch.clamp(x, max=torch.tensor(
4.6))` of a CUDA x runs under the fake mode and raises on the GPU.
check() raises the GPU's error where the arguments are on the CPU and
the GPU both.

The rule comes from the installed PyTorch's own native_functions.yaml
(torchgen's packaged copy, read once, when a first op has arguments on
two devices); without it, no check."""
import functools
import os

from torch._subclasses.fake_tensor import FakeTensor


@functools.lru_cache(maxsize=None)
def _entries():
    """{op name with overload: [checked, structured delegate, has a CUDA
    kernel, structured]} from native_functions.yaml, or {} where it is
    missing."""
    try:
        import torchgen
        path = os.path.join(os.path.dirname(torchgen.__file__), "packaged",
                            "ATen", "native", "native_functions.yaml")
        lines = open(path, encoding="utf-8").read().splitlines()
    except (ImportError, OSError):
        return {}
    ent, cur, in_dispatch = {}, None, False
    for line in lines:
        if line.startswith("- func:"):
            sig = line[len("- func:"):].strip()
            cur = ent[sig[:sig.index("(")]] = [True, None, False, False]
            in_dispatch = False
        elif cur is None or not line.startswith("  "):
            continue
        elif not line.startswith("    "):
            key, _, value = line.strip().partition(":")
            in_dispatch = key == "dispatch"
            if key == "device_check" and value.strip().startswith("NoCheck"):
                cur[0] = False
            elif key == "structured_delegate":
                cur[1] = value.strip()
                cur[3] = True
            elif key == "structured" and value.strip() == "True":
                cur[3] = True
        elif in_dispatch:
            keys = line.strip().partition(":")[0].split(",")
            if "CUDA" in (k.strip() for k in keys):
                cur[2] = True
    return ent


@functools.lru_cache(maxsize=None)
def _checked(func):
    """The wrapper's name and the (name, position) of FUNC's checked
    arguments in its order (out, then positional), or () where its CUDA
    kernel checks nothing (NoCheck, or no CUDA kernel of the
    generator's)."""
    schema = func._schema
    if not schema.name.startswith("aten::"):
        return ()
    op, overload = schema.name[len("aten::"):], schema.overload_name
    ent = _entries().get(op + "." + overload if overload else op)
    if ent is None or not ent[0]:
        return ()
    cuda = ent[2] or (ent[1] is not None and
                      _entries().get(ent[1], (0, 0, False))[2])
    if not cuda:
        return ()
    args = [(a.name, i, a.kwarg_only) for i, a in
            enumerate(schema.arguments) if _tensor_like(a.type)]
    # the generator's names: wrapper_CUDA_addmm, wrapper_CUDA_clamp_Tensor
    # (structured), wrapper_CUDA__index_select (overload, then kernel)
    method = "wrapper_CUDA_" + ("_".join(filter(None, (op, overload)))
                                if ent[3] else overload + "_" + op)
    return method, tuple((n, i) for n, i, kw in args
                         if kw and _is_out(schema, n)) + \
        tuple((n, i) for n, i, kw in args if not kw)


def _is_out(schema, name):
    return any(a.name == name and a.is_out for a in schema.arguments)


def _tensor_like(t):
    s = str(t)
    return s.startswith("Tensor") or s.startswith("Optional[Tensor]") or \
        s.startswith("List[Tensor]") or s.startswith("List[Optional[Tensor]]")


def _tensors(v):
    if isinstance(v, (list, tuple)):
        return [t for t in v if t is not None]
    return [] if v is None else [v]


def check(func, args, kwargs):
    """Raise RuntimeError, PyTorch's message, where FUNC's CUDA kernel
    would find its checked arguments on two devices (the CPU and the
    GPU)."""
    checked = _checked(func)
    if not checked:
        return
    method, common = checked[0], None
    for name, i in checked[1]:
        v = args[i] if i < len(args) else kwargs.get(name)
        for t in _tensors(v):
            # (a fake tensor's own attribute: its .device would dispatch)
            dev = t.fake_device if type(t) is FakeTensor else \
                getattr(t, "device", None)
            if dev is None or dev.type not in ("cpu", "cuda"):
                continue
            if common is None:
                common = dev
            elif dev.type != common.type:
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but got "
                    "%s is on %s, different from other tensors on %s (when "
                    "checking argument in method %s)" % (
                        name, _show(dev), _show(common), method))


def _show(dev):
    return "cuda:%d" % (dev.index or 0) if dev.type == "cuda" else dev.type
