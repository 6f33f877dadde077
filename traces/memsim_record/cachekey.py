"""The fake mode's dispatch cache keys, made faster for the recorder.

FakeTensorMode caches each op's output metadata under a key made from its
arguments (FakeTensorMode._cache_key, _prep_args_for_hash): a fake tensor
becomes its TensorMetadata (extract_tensor_metadata, flattened field by
field through dataclasses.fields), every other argument its type and value.
On the recorder's programs that key costs about as much as the op itself
(a third of the fake mode's time on makeMoE, which dispatches millions of
small ops).  prep_args below makes the same key faster where the recorder's
shapes allow it (no shape environment: sizes are never symbolic here):

- a fake tensor of this mode, strided, with no constant, becomes one tuple
  of the fields TensorMetadata holds but its memory format, which
  suggest_memory_format and is_contiguous compute from the shape and
  strides the tuple holds already (so no two tensors that PyTorch's key
  tells apart get the same key here), behind a marker object that no key
  of PyTorch's format holds (FakeTensorMode.cache is one dictionary for
  every fake mode of the process: Dynamo's and Inductor's keep theirs);
- ints, floats, bools, None, strings, dtypes, devices, layouts and memory
  formats: their type and value, as PyTorch's loop appends them, without
  its chain of isinstance tests;
- lists, tuples and dicts: as PyTorch's loop, element by element;
- anything else (SymInts, other tensors, functions, graph modules, a fake
  tensor of another mode or with a constant) goes to PyTorch's own
  _prep_args_for_hash, behind a second marker, which keeps or bypasses
  the cache as it decides.

The keys only ever select entries made by the same code, so the cache's
hits are those of PyTorch's keys: the outputs, and so the traces, are the
same (tests/recorder_cachekey.sh).
"""

# Markers: objects no key of PyTorch's own format contains.
_TENSOR = object()
_OTHER = object()


def make(torch, base):
    """A _prep_args_for_hash for a FakeTensorMode subclass of BASE, or
    None where this PyTorch's method is not the one described above (its
    arguments differ): the subclass then keeps PyTorch's."""
    import inspect
    from torch._subclasses.fake_tensor import FakeTensor

    orig = getattr(base, "_prep_args_for_hash", None)
    if orig is None:
        return None
    try:
        params = list(inspect.signature(orig).parameters)
    except (TypeError, ValueError):
        return None
    if params != ["self", "result", "args", "state", "id_hashed_objects"]:
        return None
    plain = frozenset((int, float, bool, type(None), str, torch.dtype,
                       torch.device, torch.layout, torch.memory_format))
    seqs = (list, tuple, dict)
    strided = torch.strided

    def prep_args(self, result, args, state, id_hashed_objects):
        if self.shape_env is not None:
            return orig(self, result, args, state, id_hashed_objects)
        if isinstance(args, seqs):
            result.append(type(args))
            result.append(f"length_{len(args)}")
            if isinstance(args, dict):
                prep_args(self, result, args.keys(), state,
                          id_hashed_objects)
                prep_args(self, result, args.values(), state,
                          id_hashed_objects)
                return
        append = result.append
        for arg in args:
            t = type(arg)
            if t in plain:
                append(t)
                append(arg)
            elif t is FakeTensor and arg.fake_mode is self and \
                    arg.constant is None and arg.layout is strided:
                append(_TENSOR)
                append((arg.dtype, arg.shape, arg.stride(), arg.device,
                        arg.storage_offset(), arg.untyped_storage().nbytes(),
                        arg.requires_grad, arg.is_quantized, arg.is_conj(),
                        arg.is_neg(), arg.is_inference()))
            elif t in seqs:
                prep_args(self, result, arg, state, id_hashed_objects)
            else:
                append(_OTHER)
                orig(self, result, (arg,), state, id_hashed_objects)
    return prep_args
