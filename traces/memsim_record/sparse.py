"""--fake: sparse COO tensors on the GPU (docs/recording-values.md).

A sparse COO tensor holds no storage of its own: its indices (int64,
sparse_dim x nnz) and values (nnz x dense sizes) are two dense tensors,
and they are its memory.  The fake mode builds one from fake indices and
values (_sparse_coo_tensor_with_dims_and_tensors has a fake kernel) and
answers _indices(), _values(), is_coalesced(); the ops below have no fake
kernel for sparse inputs, and their CUDA kernels allocate more than their
outputs.  Each is answered here (Dispatch._sparse, before the op runs; None: not a
sparse GPU call, the op runs as any other), by the allocations of
PyTorch's CUDA kernel:

- _to_copy (.to("cuda"), .cuda()): _to_copy's sparse branch copies the
  indices, then the values (two dense _to_copy, recorded as such), and
  makes a tensor of them, coalesced as the source was.
- _coalesce (coalesce() of a tensor not known coalesced):
  _coalesce_sparse_cuda; its output's nnz is the number of distinct
  indices, computed where the indices' values are known (values.py),
  else taken as nnz (no duplicates: the most it allocates), one
  assumption `coalesce`.
- clone: the indices, then the values copied; AccumulateGrad's, the
  shallow copy the GPU makes (clone() below).
- add, add_ of a dense tensor and a sparse one (an optimizer's step on a
  sparse gradient): add_out_dense_sparse_cuda (dense_add() below).
- t / transpose of two sparse dims: transpose clones the tensor and
  sparse_transpose_ swaps two rows of the indices through a zeros_like
  row (the dense ops recorded as such); the result is not coalesced.
- mm, addmm, _sparse_addmm of a sparse matrix by a dense one (torch.sparse
  .mm's forward; mm(S.t(), grad) its backward): s_addmm_out_sparse_dense
  _cuda; _sparse_mm's zeros come first for mm.

- detach: a tensor of the same indices and values (detach() below).
- _to_sparse of a dense GPU tensor into COO, every dim sparse
  (to_sparse() below): dense_to_sparse's nonzero, indices and values.
- _indices, _values of a tensor made here: the fake kernel's alias, with
  the values known of the tensor it was made of (part() below).
- the values of an mm / addmm's output, where its operands' are known
  (_product below: --values cpu, shadows).

Any other op of a sparse GPU tensor without a fake kernel stops the
recording naming the operator (fake.no_fake).
"""
import math

import torch
from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
from torch.utils.weak import WeakIdKeyDictionary

from . import lifecycle
from . import values

_aten = torch.ops.aten
_MAKE = _aten._sparse_coo_tensor_with_dims_and_tensors.default


def _sparse(t):
    return isinstance(t, torch.Tensor) and t.layout == torch.sparse_coo


def _cuda(t):
    return _sparse(t) and t.device.type == "cuda"


# sparse fake tensor -> (indices, values) as they were given: the fake
# mode's _indices() and _values() are new fake tensors on the same
# storages, without the values known of the ones given (values.py keys
# its shadows by tensor)
_PARTS = WeakIdKeyDictionary()


def parts(x):
    """X's indices and values, the tensors it was made of where known."""
    p = _PARTS.get(x)
    return p if p is not None else (x._indices(), x._values())


def make(x, indices, vals, coalesced, sizes=None):
    """A sparse tensor of X's sizes (or SIZES) holding INDICES and VALS
    (no allocation: the two are aliased, as alias_into_sparse does)."""
    args = (x.sparse_dim(), x.dense_dim(),
            list(x.shape if sizes is None else sizes), indices, vals)
    kw = dict(dtype=vals.dtype, layout=torch.sparse_coo, device=vals.device,
              is_coalesced=coalesced)
    if not isinstance(vals, FakeTensor):
        with unset_fake_temporarily():     # real host tensors
            return _MAKE(*args, **kw)
    out = _MAKE(*args, **kw)
    _PARTS[out] = (indices, vals)
    return out


def construct(d, mode, func, name, args, kwargs):
    """torch.sparse_coo_tensor on the GPU: no allocation (its fake
    kernel), the indices and values given kept (parts)."""
    if len(args) < 5 or not isinstance(args[4], FakeTensor):
        return None
    out = func(*args, **kwargs)
    _PARTS[out] = (args[3], args[4])
    return out


def to_copy(d, mode, func, name, args, kwargs):
    """_to_copy of a sparse tensor: its indices copied, then its values
    (_to_copy's sparse branch: two dense copies, forced)."""
    x = args[0] if args else None
    if not _sparse(x):
        return None
    dev = kwargs.get("device") or x.device
    dtype = kwargs.get("dtype") or x.dtype
    nb = bool(kwargs.get("non_blocking"))
    with mode:
        idx, val = parts(x)
        i = idx.to(device=dev, non_blocking=nb, copy=True)
        v = val.to(device=dev, dtype=dtype, non_blocking=nb,
                           copy=True)
    return make(x, i, v, x.is_coalesced())


def coalesce(d, mode, func, name, args, kwargs):
    """_coalesce_sparse_cuda.  In allocation order: the flattened indices
    (flatten_indices: a clone for one sparse dim, the flattening kernel's
    int64 output for more), origIndices and uniqueOffsets (int64, nnz
    each), thrust::sort_by_key's temporary storage (through
    at::cuda::ThrustAllocator), the new values, a contiguous copy of
    non-contiguous values, the new indices (sparse_dim x newNnz; for one
    sparse dim the flattened indices themselves, resized in place);
    freed on return: uniqueOffsets, origIndices, the flattened indices,
    the values' copy.  Approximations: the sort (a merge sort, LTOp being
    no plain less) is taken to need one buffer of its keys and values
    (16 bytes an entry), its few hundred bytes of merge partitions and
    unique_by_key's tile state left out."""
    x = args[0] if args else None
    if not _cuda(x):
        return None
    rec = d.rec
    vs = rec.known.values
    idx, val = parts(x)
    nnz, sd = x._nnz(), x.sparse_dim()
    if nnz < 2:
        # a clone, marked coalesced
        with mode:
            i, v = idx.clone(), val.clone()
        return make(x, i, v, True)
    ri = vs.real(idx) if vs is not None else None
    new, real = nnz, None
    if ri is not None:
        rv = vs.real(val)
        with vs.unset():
            if rv is None:
                rv = torch.zeros(tuple(val.shape), dtype=val.dtype)
            real = make(x, ri, rv, False).coalesce()
            new = real._nnz()
            real = (real._indices(), real._values())
    else:
        values.assume(rec, "coalesce", nnz)
    site = "_coalesce_sparse_cuda temporaries"
    keys = {}
    cuda = val.device
    flat = None
    if sd == 1:
        flat = torch.empty((nnz,), dtype=torch.long, device=cuda)
        d.note_all([flat], name)
        ev = []
    else:
        ev = [("alloc", "flat", 8 * nnz)]
    ev += [("alloc", "orig", 8 * nnz), ("alloc", "uniq", 8 * nnz),
           ("alloc", "sort", 16 * nnz), ("free", "sort")]
    d.run_events(ev, keys, site)
    nv = torch.empty((new,) + tuple(val.shape[1:]), dtype=val.dtype,
                     device=cuda)
    d.note_all([nv], name)
    ev = []
    if new * math.prod(val.shape[1:]) > 0 and not val.is_contiguous():
        ev.append(("alloc", "values", val.numel() * val.element_size()))
    d.run_events(ev, keys, site)
    if flat is not None:
        ni = flat.as_strided((1, new), (new, 1))
    else:
        ni = torch.empty((sd, new), dtype=torch.long, device=cuda)
        d.note_all([ni], name)
    ev = [("free", "uniq"), ("free", "orig")]
    if flat is None:
        ev.append(("free", "flat"))
    if "values" in keys:
        ev.append(("free", "values"))
    d.run_events(ev, keys, site)
    if real is not None:
        vs._set(ni, real[0])
        if vs.real(val) is not None:
            vs._set(nv, real[1])
    return make(x, ni, nv, True)


def transpose(d, mode, func, name, args, kwargs):
    """transpose (t) of a sparse tensor: clone, then sparse_transpose_
    swaps the two rows of the indices through a zeros_like row."""
    x = args[0] if args else None
    if not _cuda(x):
        return None
    if name == "t":
        d0, d1 = 0, min(1, x.dim() - 1)
    else:
        d0, d1 = (a % x.dim() for a in args[1:3])
    sd = x.sparse_dim()
    if d0 >= sd or d1 >= sd:
        return None    # a dense dim: no rule (the fake mode's answer)
    idx, val = parts(x)
    with mode:
        i, v = idx.clone(), val.clone()
        if d0 != d1 and i.numel():
            r0, r1 = i.select(0, d0), i.select(0, d1)
            tmp = torch.zeros_like(r0)
            tmp.copy_(r0)
            r0.copy_(r1)
            r1.copy_(tmp)
            del tmp
    # the swapped indices' values, where known (the copies through the
    # rows' views leave them stale in values.py)
    vs = d.rec.known.values
    ri = vs.real(idx) if vs is not None and d0 != d1 else None
    if ri is not None:
        with vs.unset():
            ri = ri.clone()
            ri[[d0, d1]] = ri[[d1, d0]]
        vs._set(i, ri)
    sizes = list(x.shape)
    sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
    return make(x, i, v, d0 == d1 and x.is_coalesced(), sizes)


def addmm(d, mode, func, name, args, kwargs):
    """mm / addmm / _sparse_addmm of a sparse matrix S (m x k) by a dense
    one D (k x n): s_addmm_out_sparse_dense_cuda.  For mm, _sparse_mm's
    zeros (m x n) first, then beta 0.  In allocation order: the output
    (m x n), S coalesced where it is not (_coalesce's allocations, freed
    on return), _to_csr_int's row offsets (int32, m + 1) and its int32
    copy of the row indices (freed at once), the int32 column indices,
    a column-major copy of the output (the output is row-major), a
    contiguous copy of D where D is neither column- nor row-major;
    freed on return in reverse.  cusparseSpMM's buffer
    (cusparseSpMM_bufferSize, through the caching allocator) is left
    out: its size is cuSPARSE's own, not known here."""
    if name == "mm":
        s, dn, t = args[0], args[1], None
    else:
        t, s, dn = args[:3]
    if not _cuda(s) or _sparse(dn) or s.sparse_dim() != 2 or \
            not isinstance(dn, torch.Tensor) or dn.dim() != 2:
        return None
    m, n = s.shape[0], dn.shape[1]
    if t is None:
        with mode:
            t = torch.zeros((m, n), dtype=dn.dtype, device=dn.device)
    out = torch.empty((m, n), dtype=t.dtype, device=dn.device)
    d.note_all([out], name)
    site = "s_addmm_out_sparse_dense_cuda temporaries"
    sc = s
    if not s.is_coalesced():
        with mode:
            sc = s.coalesce()
        i, v = parts(sc)
        d.rec.relabel(i, "temporary", site)
        d.rec.relabel(v, "temporary", site)
        del i, v
    nnz = sc._nnz()
    isz = out.element_size()
    ev = [("alloc", "csr", 4 * (m + 1)), ("alloc", "rows", 4 * nnz),
          ("free", "rows"), ("alloc", "cols", 4 * nnz)]
    if not (out.stride(0) == 1 and out.stride(1) == m):
        ev.append(("alloc", "r", m * n * isz))
    if nnz > 0 and not (dn.stride(0) == 1 and dn.stride(1) == dn.shape[0]) \
            and not (dn.stride(1) == 1 and dn.stride(0) != dn.shape[1]) \
            and not dn.is_contiguous():
        ev.append(("alloc", "dense", dn.numel() * isz))
    ev += [("free", e[1]) for e in reversed(ev)
           if e[0] == "alloc" and e[1] != "rows"]
    d.run_events(ev, {}, site)
    # the coalesced copy goes on return (its values, then its indices),
    # then _sparse_mm's zeros
    del sc
    _product(d, name, kwargs, s, dn, t, out)
    return out


def _product(d, name, kwargs, s, dn, t, out):
    """OUT's values, where S's indices and values, D's and (addmm) T's
    are known (values.py: --values cpu, or shadows): the product computed
    on the host, as the kernel computes it, so that the values go on past
    a sparse mm (pygcn's and powerful-gnns' torch.spmm: under --values cpu
    every loss after it was the .item() rule's 1.0)."""
    vs = d.rec.known.values
    if vs is None or not (vs.cpu or vs._small(out)):
        return
    idx, val = parts(s)
    ri, rv, rd = vs.real(idx), vs.real(val), vs.real(dn)
    rt = vs.real(t) if name != "mm" else None
    if ri is None or rv is None or rd is None or \
            name != "mm" and rt is None:
        return
    with vs.unset():
        sc = torch.sparse_coo_tensor(ri, rv, tuple(s.shape),
                                     check_invariants=False)
        if name == "mm":
            r = torch.sparse.mm(sc, rd)
        else:
            r = torch.addmm(rt, sc, rd, beta=kwargs.get("beta", 1),
                            alpha=kwargs.get("alpha", 1))
        r = r.to(out.dtype)
    vs._set(out, vs._layout(out, r))


def clone(d, mode, func, name, args, kwargs):
    """clone of a sparse GPU tensor (the fake kernel's has no entries).
    AccumulateGrad's: a sparse gradient (a sparse embedding's) is
    cloned where its parts' use counts are above one; on the GPU the
    tensor a backward formula returns is the only holder of its indices
    and values, and AccumulateGrad takes its shallow copy
    (_sparse_coo_tensor_unsafe of the same two: no allocation), which is
    what it gets here, where the recorder's own references to the parts
    would send it to the clone.  Any other: clone_sparse's
    copy_into_sparse, the indices copied, then the values."""
    x = args[0] if args else None
    if not _cuda(x):
        return None
    idx, val = parts(x)
    node = lifecycle.autograd_node()
    if node is not None and node.name() == "torch::autograd::AccumulateGrad":
        return make(x, idx, val, x.is_coalesced())
    with mode:
        i, v = idx.clone(), val.clone()
    return make(x, i, v, x.is_coalesced())


def dense_add(d, mode, func, name, args, kwargs):
    """add / add_ of a dense GPU tensor and a sparse one (an optimizer's
    step on a sparse gradient: SGD's param.add_(grad, alpha=-lr)):
    add_out_dense_sparse_cuda.  add's result is made and the dense one
    copied into it (add_sparse: empty, resize_as_, copy_); an operand of
    another dtype is converted.  Not coalesced (a sparse embedding's
    gradient): the values index_add_ed into a (rows, columns) view of
    the result by the flattened indices (flatten_indices: the one row
    itself for one sparse dim; else the indices times their strides,
    copied from the host, summed).  Coalesced: sparseElementwiseKernel,
    on contiguous values."""
    if len(args) < 2 or not _cuda(args[1]) or _sparse(args[0]) or \
            not isinstance(args[0], FakeTensor):
        return None
    x, sp = args[0], args[1]
    alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
    common = torch.result_type(x, sp)
    with mode:
        if name == "add_":
            r = x
        else:
            r = torch.empty_like(x, dtype=common,
                                 memory_format=torch.contiguous_format)
            r.copy_(x)
        nnz = sp._nnz()
        if nnz == 0:
            return r
        idx, val = parts(sp)
        if val.dtype != common:
            val = val.to(common)
        sd = sp.sparse_dim()
        if sp.is_coalesced():
            if sp.dense_dim() > 0:
                val = val.contiguous()
            return r
        if sd == 1:
            flat = idx.squeeze(0)
        else:
            strides, m = [0] * sd, 1
            for i in range(sd - 1, -1, -1):
                strides[i] = m
                m *= sp.shape[i]
            mult = torch.tensor(strides, dtype=torch.long).view(sd, 1).to(
                idx.device, non_blocking=True)
            flat = idx.mul(mult).sum(0)
        rows = math.prod(r.shape[:sd])
        cols = math.prod(r.shape[sd:])
        r.view(rows, cols).index_add_(0, flat, val.reshape(nnz, cols),
                                      alpha=alpha)
    return r


def detach(d, mode, func, name, args, kwargs):
    """detach of a sparse GPU tensor (torch.sparse_coo_tensor of values
    that require grad detaches its result: PEFT's SHiRA delta weight):
    a tensor of the same indices and values, nothing allocated, as
    detach's alias; the fake kernel's makes its result on the CUDA
    backend and fails."""
    x = args[0] if args else None
    if not _cuda(x):
        return None
    # made of the fake kernel's aliases (with the values given, which
    # require grad, _MAKE's fake kernel fails as detach's does), the
    # parts given kept for their known values (parts)
    out = make(x, x._indices(), x._values(), x.is_coalesced())
    _PARTS[out] = parts(x)
    return out


def to_sparse(d, mode, func, name, args, kwargs):
    """to_sparse() of a dense GPU tensor, every dim sparse
    (dense_to_sparse): its nonzero (the values rules' count where its
    values are not known), transposed; the indices, a clone of that
    (dims x nnz); the values, the tensor indexed at them (index: 1 x
    nnz), squeezed and cloned; freed on return the indexed copy, then
    the nonzero.  No entries: an empty tensor of those sizes.  Another
    layout, a block size, dense dims (unique_dim of the indices): no
    rule (the operator named)."""
    x = args[0] if args else None
    if not isinstance(x, FakeTensor) or x.device.type != "cuda" or \
            _sparse(x) or x.dim() == 0:
        return None
    sd = args[1] if len(args) > 1 else None
    if kwargs.get("layout") not in (None, torch.sparse_coo) or \
            kwargs.get("blocksize") is not None or \
            kwargs.get("dense_dim") not in (None, 0) or \
            sd not in (None, x.dim()):
        return None
    with mode:
        nz = torch.nonzero(x).t()
        n = nz.shape[1]
        if n == 0:
            i = torch.empty((x.dim(), 0), dtype=torch.long, device=x.device)
            v = torch.empty((0,), dtype=x.dtype, device=x.device)
        else:
            i = nz.clone()
            picked = _aten.index.Tensor(x, list(i.chunk(i.shape[0], 0)))
            v = picked.squeeze(0).clone()
            del picked
        del nz
    out = _MAKE(x.dim(), 0, list(x.shape), i, v, dtype=x.dtype,
                layout=torch.sparse_coo, device=x.device, is_coalesced=True)
    _PARTS[out] = (i, v)
    return out


def part(d, mode, func, name, args, kwargs):
    """_indices() / _values() of a sparse GPU tensor made here: the fake
    kernel's alias of the indices or values, with the values known of the
    tensor given (values.py keys them by tensor, and the fake kernel's
    alias is a new one): pyGAT's SpecialSpmmFunction.backward gathers its
    edges' gradient at `a._indices()[0, :] * N + a._indices()[1, :]`,
    whose values --values cpu had lost, and every loss after the first
    backward with them."""
    x = args[0] if args else None
    given = _PARTS.get(x) if _cuda(x) else None
    if given is None:
        return None
    out = func(*args, **kwargs)
    vs = d.rec.known.values
    src = given[0 if name == "_indices" else 1]
    r = vs.real(src) if vs is not None else None
    if r is not None and isinstance(out, FakeTensor) and \
            tuple(r.shape) == tuple(out.shape):
        vs._set(out, r)
    return out


HANDLERS = {
    "_indices": part,
    "_values": part,
    "add_": dense_add,      # (add: Dispatch._add, which calls dense_add)
    "_sparse_coo_tensor_with_dims_and_tensors": construct,
    "clone": clone,
    "detach": detach,
    "_to_sparse": to_sparse,
    "_to_copy": to_copy,
    "_coalesce": coalesce,
    "t": transpose,
    "transpose": transpose,
    "mm": addmm,
    "addmm": addmm,
    "_sparse_addmm": addmm,
}
