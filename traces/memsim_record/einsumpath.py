"""torch.einsum's contraction order as on a machine with opt_einsum.

torch.functional.einsum contracts three operands or more in the order
opt_einsum's contract_path gives (strategy "auto" by default) where the
opt_einsum package is installed, and left to right where it is not; the
intermediates, their sizes and what autograd saves of them differ
(Time-Series-Library's MambaSimple: +18% peak allocated left to right;
mamba-minimal's language model +11.5%).  GPU machines commonly have
opt_einsum (it comes with JAX, TensorFlow, Pyro...; the reference H200
and H100 have it), the CPU machine that records often does not, and a
prediction should not depend on which packages the recording machine
has.  So where opt_einsum is missing the recorder stands this module in
for it (install(): torch.backends.opt_einsum then reports it available,
and the program's own einsum, eager, traced by TorchDynamo or by
AOTAutograd, asks contract_path below), with an assumption a call
(einsum:opt-einsum, or einsum:left-to-right where the order is not
computed here).  A program that sets torch.backends.opt_einsum.enabled =
False contracts left to right, as with opt_einsum.

contract_path gives opt_einsum's own path for up to four operands: its
"auto" strategy is then paths.optimal, a depth-first search over all
pairwise orders keeping the one of fewest estimated operations, the
first found among equals (its iteration order and its cache of pair
costs, keyed by the two operands' indices only, kept as opt_einsum has
them, so that ties fall as they fall there).  For five or more operands
"auto" takes opt_einsum's branch-and-bound and greedy searches, which
are not reproduced: the path is then left to right, assumption
einsum:left-to-right."""
import itertools

from .symbolic import hint

# (filled by install(): the note to make at each path asked)
_STATE = {"note": None}


def _sets(equation, shapes):
    """The index sets of the operands, the output's and each index's
    size (opt_einsum's parse: broadcast dimensions of 1 take the other
    operands' size; an ellipsis its own indices, aligned from the
    right; an implicit output the indices that appear once)."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError("einsum(): %d operands for %d subscripts"
                         % (len(shapes), len(terms)))
    ell = 0
    for t, s in zip(terms, shapes):
        if "..." in t:
            ell = max(ell, len(s) - (len(t) - 3))
    # indices of the ellipsis: characters the equation does not use
    used = set(eq)
    free = [chr(c) for c in range(0x100, 0x100 + 64 + ell)
            if chr(c) not in used][:ell]
    seqs = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            k = len(s) - (len(t) - 3)
            t = t.replace("...", "".join(free[ell - k:]))
        if len(t) != len(s):
            raise ValueError("einsum(): subscripts %r for a tensor of %d "
                             "dimensions" % (t, len(s)))
        seqs.append(t)
    if arrow:
        output = set(out.replace("...", "".join(free)))
    else:
        letters = "".join(seqs)
        output = {c for c in letters if letters.count(c) == 1} | set(free)
    size = {}
    for t, s in zip(seqs, shapes):
        for c, d in zip(t, s):
            d = hint(d)
            if size.get(c, 1) == 1:
                size[c] = d
    return [frozenset(t) for t in seqs], frozenset(output), size


def _elements(indices, size):
    n = 1
    for c in indices:
        n *= size[c]
    return n


def _optimal(inputs, output, size):
    """opt_einsum's paths.optimal (no memory limit): the path in
    static single assignment ids."""
    inputs = tuple(inputs)
    best = [float("inf"), (tuple(range(len(inputs))),)]
    cache = {}

    def pair(ins, remaining, i, j):
        k1, k2 = ins[i], ins[j]
        either = k1 | k2
        keep = frozenset.union(output, *(ins[r] for r in remaining - {i, j}))
        k12 = either & keep
        # calc_k12_flops: flop_count(either, inner, 2 terms)
        return k12, _elements(either, size) * (
            2 if (k1 & k2) - keep else 1)

    def walk(path, remaining, ins, flops):
        if len(remaining) == 1:
            best[0], best[1] = flops, path
            return
        for i, j in itertools.combinations(remaining, 2):
            if i > j:
                i, j = j, i
            key = (ins[i], ins[j])
            if key not in cache:
                cache[key] = pair(ins, remaining, i, j)
            k12, f12 = cache[key]
            if flops + f12 >= best[0]:
                continue
            walk(path + ((i, j),), remaining - {i, j} | {len(ins)},
                 ins + (k12,), flops + f12)

    walk((), set(range(len(inputs))), inputs, 0)
    return best[1]


def _linear(ssa):
    """opt_einsum's ssa_to_linear: the path in the ids of the list of
    operands left after each contraction (its result appended)."""
    n = sum(map(len, ssa)) - len(ssa) + 1
    ids = list(range(n))
    path = []
    for k, con in enumerate(ssa):
        lin = sorted(ids.index(s) for s in con)
        for j in reversed(lin):
            ids.pop(j)
        ids.append(n + k)
        path.append(tuple(lin))
    return path


def left_to_right(n):
    """The order torch contracts in without a path: the first two
    operands, then their product with each next one (as a path gives
    it, each pair in sorted order: torch's pairwise contraction then
    takes the two operands the other way round, transposed
    intermediates of the same sizes)."""
    if n < 2:
        return [tuple(range(n))]
    return [(0, 1)] + [(0, n - 2 - k) for k in range(n - 2)]


def contract_path(equation, *operands, optimize="auto", **kwargs):
    """opt_einsum.contract_path as torch.functional.einsum calls it:
    (path, None); the path as its "auto" or "optimal" strategy gives it
    for up to four operands, else left to right (module docstring)."""
    shapes = [tuple(getattr(t, "shape", t)) for t in operands]
    n = len(shapes)
    if optimize in (None, True):
        optimize = "auto"
    ok = n <= 2 or (optimize in ("auto", "optimal") and n <= 4)
    note = _STATE["note"]
    if note is not None:
        note(operands, "einsum:opt-einsum" if ok else "einsum:left-to-right")
    if n <= 2:
        return [tuple(range(n))], None
    if not ok:
        return left_to_right(n), None
    inputs, output, size = _sets(equation, shapes)
    return _linear(_optimal(inputs, output, size)), None


def contract(equation, *operands, **kwargs):
    """opt_einsum.contract of torch tensors, for a program that takes the
    package from torch.backends.opt_einsum.get_opt_einsum(): torch.einsum,
    which asks contract_path for its order."""
    import torch
    return torch.einsum(equation, *operands)


class _Module:
    """What torch.backends.opt_einsum and the programs that take the
    package from it ask of opt_einsum."""
    __version__ = "memsim"
    contract_path = staticmethod(contract_path)
    contract = staticmethod(contract)


def install(torch, note):
    """Stands this module in for a missing opt_einsum (module
    docstring); NOTE(operands, kind) is called at each path asked.
    Returns the undo, or None where opt_einsum is installed (or this
    PyTorch has no backend for it)."""
    backend = getattr(torch.backends, "opt_einsum", None)
    m = getattr(backend, "m", None)
    if m is None or backend.is_available():
        return None
    saved = (m._opt_einsum, m.enabled, m.strategy)
    # (is_available() is an lru_cache of the module's _opt_einsum)
    clear = getattr(m.is_available, "cache_clear", lambda: None)
    m._opt_einsum = _Module
    clear()
    m.enabled, m.strategy = True, "auto"
    _STATE["note"] = note

    def undo():
        m._opt_einsum, m.enabled, m.strategy = saved
        clear()
        _STATE["note"] = None
    return undo
