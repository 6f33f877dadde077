"""The fake mode's dispatch cache, its keys and its hits made faster.

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

A hit makes its output from the entry's metadata
(_get_output_tensor_from_cache_entry): output_from_entry below does what
PyTorch's does for a plain strided output with no shape environment (an
empty_strided on the meta device inside the fake mode's kernel invocation,
set_ on the input's storage for a view, then FakeTensor), with the guards
of in_kernel_invocation_manager entered directly rather than through a
generator context manager each time, and the metadata's sizes used as
they are (PyTorch's check_value passes plain ints through); anything else
goes to PyTorch's method.

install() puts both on the recorder's FakeTensorMode subclass.
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


def output_from_entry(torch, base):
    """A _get_output_tensor_from_cache_entry for a subclass of BASE, or
    None where this PyTorch's method is not the one described above."""
    import inspect
    from torch._subclasses.fake_tensor import FakeTensor

    orig = getattr(base, "_get_output_tensor_from_cache_entry", None)
    C = torch._C
    if orig is None or not all(hasattr(C, n) for n in (
            "_DisableTorchDispatch", "_PreserveDispatchKeyGuard",
            "_meta_in_tls_dispatch_include",
            "_set_meta_in_tls_dispatch_include")):
        return None
    try:
        params = list(inspect.signature(orig).parameters)
    except (TypeError, ValueError):
        return None
    if params != ["self", "state", "entry", "key", "func", "args"]:
        return None
    strided = torch.strided
    OpOverload = torch._ops.OpOverload
    empty_strided = torch.empty_strided

    def output(self, state, entry, key, func, args):
        md = entry.metadata
        if self.shape_env is not None or md is None or \
                entry.inplace_idx is not None or md.layout is not strided \
                or md.is_sparse or C._meta_in_tls_dispatch_include() != \
                self.in_kernel_invocation:
            return orig(self, state, entry, key, func, args)
        view = isinstance(func, OpOverload) and func.is_view
        if view:
            arg = args[entry.view_idx]
            if not isinstance(arg, FakeTensor):
                return orig(self, state, entry, key, func, args)
            storage = arg.untyped_storage()
        prev = self.in_kernel_invocation
        # in_kernel_invocation_manager(self)
        with C._DisableTorchDispatch():
            self.in_kernel_invocation = True
            with C._PreserveDispatchKeyGuard():
                C._set_meta_in_tls_dispatch_include(True)
                try:
                    empty = empty_strided(
                        md.shape, md.stride, dtype=md.dtype, layout=strided,
                        device="meta", requires_grad=md.requires_grad)
                    if md.is_conj:
                        C._set_conj(empty, True)
                    if md.is_neg:
                        C._set_neg(empty, True)
                    if view:
                        empty.set_(storage, md.storage_offset, md.shape,
                                   md.stride)
                finally:
                    self.in_kernel_invocation = prev
        return FakeTensor(self, empty, md.device)
    return output


def install(torch, mode, base):
    """Puts prep_args and output_from_entry, where this PyTorch allows
    them, on MODE, a subclass of FakeTensorMode BASE."""
    prep = make(torch, base)
    if prep is not None:
        mode._prep_args_for_hash = prep
    out = output_from_entry(torch, base)
    if out is not None:
        mode._get_output_tensor_from_cache_entry = out
