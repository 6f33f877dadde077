"""The scalar conversion check of a CUDA kernel, which the fake kernels
skip.

A kernel that writes a Python number into a tensor (fill_, masked_fill,
full, index_fill, clamp's bounds) converts it with Scalar::to<scalar_t>,
that is c10::checked_convert, which raises "value cannot be converted to
type c10::BFloat16 without overflow" when the number lies outside the
type's range (c10::overflows: an infinity or NaN passes where the type
has one; a negative integer passes into an unsigned type whose maximum
its magnitude does not pass, as two's complement wraps it).  The fake
kernels never convert the number, so a program that masks attention
scores with -torch.finfo(torch.float32).max in bf16 (muse-maskgit's
flash attention under autocast) stopped on the GPU and recorded to its
end.  check() raises the GPU's error for such an op on a GPU tensor; on
host tensors the op runs for real and raises by itself."""
import math

import torch

# op name: the index of the number among the positional arguments and
# its keyword name, and how the target dtype is found ("self": the
# first argument's; "result": clamp's result_type of the tensor and the
# number; "kw": the dtype keyword, else the first argument's, else the
# number's own default)
_OPS = {
    "fill": (1, "value", "self"), "fill_": (1, "value", "self"),
    "masked_fill": (2, "value", "self"), "masked_fill_": (2, "value", "self"),
    "index_fill": (3, "value", "self"), "index_fill_": (3, "value", "self"),
    "full": (1, "fill_value", "kw"), "full_like": (1, "fill_value", "kw"),
    "new_full": (2, "fill_value", "kw"),
    "clamp": ((1, 2), ("min", "max"), "result"),
    "clamp_": ((1, 2), ("min", "max"), "result"),
    "clamp_min": (1, "min", "result"), "clamp_min_": (1, "min", "result"),
    "clamp_max": (1, "max", "result"), "clamp_max_": (1, "max", "result"),
}
OPS = frozenset(_OPS)

# c10's names of the types, as the error prints them (typeid's
# demangled names of at::Half and the others)
_NAMES = {torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16",
          torch.float32: "float", torch.float64: "double",
          torch.uint8: "uint8_t", torch.int8: "int8_t",
          torch.int16: "int16_t", torch.int32: "int", torch.int64: "int64_t"}
for _n in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _n):
        _NAMES[getattr(torch, _n)] = _n + "_t"
for _n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
           "float8_e5m2fnuz"):
    if hasattr(torch, _n):
        _NAMES[getattr(torch, _n)] = "c10::" + _n.capitalize()
# the floating types without an infinity (std::numeric_limits'
# has_infinity false): an infinity overflows them
_NO_INF = frozenset(getattr(torch, n) for n in
                    ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz")
                    if hasattr(torch, n))


def overflows(dtype, v):
    """c10::overflows<dtype>(v) of a Python number V."""
    if isinstance(v, bool) or dtype not in _NAMES:
        # (bool and complex types: no check)
        return False
    if dtype.is_floating_point:
        if isinstance(v, float) and math.isnan(v):
            return False
        if isinstance(v, float) and math.isinf(v):
            return dtype in _NO_INF
        fi = torch.finfo(dtype)
        return v < fi.min or v > fi.max
    ii = torch.iinfo(dtype)
    if ii.min == 0 and isinstance(v, int) and v < 0:
        return -v > ii.max
    return v < ii.min or v > ii.max


def _number(v):
    """V as the Python number the kernel converts: a number, or a host
    0-dim tensor's value (masked_fill's Tensor overload takes
    value.item()); else None."""
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, torch.Tensor) and v.device.type == "cpu" and \
            v.dim() == 0 and not v.is_complex():
        from torch._subclasses.fake_tensor import unset_fake_temporarily
        with unset_fake_temporarily():
            return v.item()
    return None


def _result_type(dtype, v):
    """torch.result_type of a tensor of DTYPE and the number V (a
    wrapped number: its category alone promotes)."""
    if isinstance(v, float) and not dtype.is_floating_point and \
            not dtype.is_complex:
        return torch.get_default_dtype()
    if isinstance(v, int) and not isinstance(v, bool) and \
            dtype is torch.bool:
        return torch.int64
    return dtype


def _on_gpu(args, kwargs, kind):
    if kind == "kw" and args and not isinstance(args[0], torch.Tensor):
        dv = kwargs.get("device")
        return dv is not None and torch.device(dv).type == "cuda"
    return bool(args) and isinstance(args[0], torch.Tensor) and \
        args[0].device.type == "cuda"


def check(name, args, kwargs):
    """Raise the CUDA kernel's RuntimeError where op NAME would convert a
    number out of its target type's range."""
    spec = _OPS.get(name)
    if spec is None:
        return
    pos, key, kind = spec
    if not _on_gpu(args, kwargs, kind):
        return
    pos, key = (pos, key) if isinstance(pos, tuple) else ((pos,), (key,))
    for p, k in zip(pos, key):
        v = _number(args[p] if len(args) > p else kwargs.get(k))
        if v is None:
            continue
        if kind == "result":
            dtype = _result_type(args[0].dtype, v)
        elif kind == "kw":
            dtype = kwargs.get("dtype") or (
                args[0].dtype if isinstance(args[0], torch.Tensor)
                else None)
            if dtype is None:
                # full's own: the default dtype for a float, int64 for
                # an int (bool: no check)
                dtype = torch.get_default_dtype() if isinstance(v, float) \
                    else torch.int64
        else:
            dtype = args[0].dtype
        if overflows(dtype, v):
            raise RuntimeError("value cannot be converted to type %s "
                               "without overflow" % _NAMES[dtype])
