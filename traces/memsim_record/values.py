"""--fake: the values of GPU tensors, where the program needs them.

Fake tensors carry shapes, not values.  A value that crosses to the host
(.item(), .tolist(), bool(t), float(t), .cpu()) or a size that depends on
data (nonzero, boolean indexing, unique, ...) is answered from what the
recorder knows of the tensor, best first (docs/recording-values.md):

1. Exact values ("shadows"): a real CPU tensor beside the fake one, with
   its values.  Under --values rules (the default) only small tensors
   (SHADOW_LIMIT elements, INDEX_LIMIT for integers and bools) of
   deterministic origin have one:
   arange, linspace, logspace, full/zeros/ones, eye, tril/triu_indices,
   constants (torch.tensor), CPU data moved to the GPU, and every op whose
   inputs all have one (the op is run on the CPU on the shadows).  A
   larger host tensor copied whole into a fake one (a checkpoint's:
   load_state_dict's copy_) is kept by reference for the host alone
   (Values._upload).  Under
   --values cpu every tensor has one: the whole program is computed on
   the CPU at its real shapes, random ops included (on the GPU from a
   generator of the recorder's own, seeded 0 and again by the program's
   torch.manual_seed / torch.cuda.manual_seed(_all), so that the program's own
   CPU random stream is as in a real run; on the host from the program's
   own generator, as in the real run: Values._run).
2. Routing (--values rules): the indices of topk / argmax / argmin /
   max(dim) / min(dim) over a dimension of at most ROUTE_MAX entries (the
   experts of a mixture of experts), and of a topk of k > 1 over any
   dimension (its k indices are distinct), get an exact shadow that routes the
   rows uniformly: row t's j-th choice is the (j * rows + t s mod
   rows)-th entry of a list holding expert e c_e times, c_e = rows * k /
   E (largest remainder), s the least integer from c_e prime to rows
   (route_stride), so each expert gets k/E of the choices, a row's k
   choices are distinct and consecutive rows (a sequence's tokens) go
   round the experts.  --routing-imbalance F gives expert 0 F times
   its share (at most every row), the others the rest evenly.  Counted
   as one assumption `routing` per op.  A sparse gate scattered at routed
   indices into a tensor of known values (zeros.scatter(1, idx, gates))
   gets a shadow with the scattered values taken nonzero (1.0, or their
   range's midpoint): assumption `scatter:src`.
3. Ranges: what the op guarantees of each element.  uniform_(a, b) and
   rand: [a, b); randint(lo, hi), random_(lo, hi): the integers of
   [lo, hi); bernoulli: 0 or 1; randperm(n), multinomial over n
   categories, the indices of topk/sort/argmax/... over a dimension of
   size n: the integers of [0, n).  Views, copies, gathers, casts,
   max/min/mean keep a range; adding, subtracting, multiplying or
   dividing by a known positive scalar moves it; clamp and remainder by a
   known scalar bound it (a clamp between two known bounds gives one,
   whatever its input); a range times a tensor of known values is the
   product of the range and theirs; a comparison with a known scalar
   that the range decides is known (known.py).  .item() of a range
   answers its midpoint ((a + b) / 2 for reals, the lower median
   lo + (hi - lo) // 2 of the integers lo..hi), never an end it
   excludes: assumption `item:range`.
4. known.py's uniform scalars, then the default rules of fake._item_value
   (float 1.0, --item-int, --item-bool).

Assumptions are `annotate` rows (category "assumption") whose site is
"KIND FILE:LINE =VALUE", counted by KIND in the recorder's summary.
"""
import functools
import itertools
import math
import os
import re
import sys
import weakref

from . import known as _known

_SERIAL = itertools.count(1)    # Values.serials' numbers

SHADOW_LIMIT = 1 << 16        # elements of a floating tensor
INDEX_LIMIT = 1 << 22         # of an integer or bool one (ids, masks)
ROUTE_MAX = 256

# Deterministic ops that make a tensor from scalars (the rules mode's
# sources of shadows).
SOURCES = frozenset((
    "arange", "linspace", "logspace", "full", "full_like", "new_full",
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones",
    "eye", "scalar_tensor", "lift_fresh", "lift_fresh_copy", "fill",
    "fill_", "zero_", "zero", "tril_indices", "triu_indices", "_to_copy",
    "copy_", "copy", "tensor"))
# Random ops: their values' range (rules mode).
RANDOM = frozenset((
    "uniform", "uniform_", "rand", "rand_like", "randint", "randint_like",
    "random", "random_", "bernoulli", "bernoulli_", "randperm",
    "multinomial"))
# Random ops whose elements are independent draws, each uniform over
# their range (random_range): a comparison of them with a constant is
# true with a known probability (Values._draws).  Not bernoulli (0 or 1,
# with its own probability), multinomial (weighted).
UNIFORM = RANDOM - {"bernoulli", "bernoulli_", "multinomial"}
# Ops whose every output element is one of the input's elements (views,
# copies, casts, gathers): each keeps the input's distribution.
DRAWN = _known.SAME - {"max", "min", "amax", "amin"}
# Random ops whose elements are independent normal draws (normal_params):
# a comparison of them with a constant is true with the normal
# distribution's probability (Values._normal_draws).
NORMAL = frozenset(("randn", "randn_like", "normal", "normal_"))
COMPARE = frozenset(("lt", "le", "gt", "ge", "eq", "ne"))


# Ops whose every value lies in a range of their own, whatever the
# input's (rules mode): a tanh's, a sigmoid's (increasing functions: the
# image of the input's range, or of [-inf, inf]), a softmax's ([0, 1]).
def _sigmoid(v):
    return 0.5 * (1.0 + math.tanh(0.5 * v))    # (no overflow)


# Ops whose values are never negative, whatever the input's: abs (of a
# complex tensor too, its modulus), [0, inf) or the image of the input's
# range (Values._rules).  An infinite end answers no host value
# (Range.finite): the default rules answer those, as without a range.
NONNEG = frozenset(("abs",))
BOUNDED = {"tanh": math.tanh, "tanh_": math.tanh, "sigmoid": _sigmoid,
           "sigmoid_": _sigmoid, "_softmax": None, "softmax": None}
# Clamps: between two known bounds the output's range is [min, max] (met
# with the input's where it has one), whatever the input's values
# (Values._rules).  clamp_min and clamp_max: Inductor's decomposition of
# a clamp (the fused nodes of a compiled graph, compiled.Program._values).
CLAMPS = frozenset(("clamp", "clamp_", "clip", "clip_", "clamp_min",
                    "clamp_min_", "clamp_max", "clamp_max_"))
INDICES = {"topk": 1, "sort": 1, "argsort": 0, "argmax": 0, "argmin": 0,
           "max": 1, "min": 1, "kthvalue": 1, "mode": 1, "median": 1,
           "nanmedian": 1, "cummax": 1, "cummin": 1}
ROUTING = frozenset(("topk", "argmax", "argmin", "max", "min"))
# Insertion points into a sorted sequence (bucketize's boundaries,
# searchsorted's sorted_sequence): each index 0 to the sequence's length
# (Values._rules).
SEARCHES = frozenset(("bucketize", "searchsorted"))
# Reductions whose answers the host read once are kept (Values._recipe):
# the same reduction of the same unwritten elements again has the same
# values.
RECIPES = frozenset(("min", "max", "amin", "amax", "aminmax", "sum",
                     "mean", "prod", "std", "var", "norm",
                     "linalg_vector_norm"))
# Elementwise ops whose outputs are compared by torch.equal (Values._twin):
# the same op of the same elements and arguments makes the same values.
TWINS = frozenset((
    "add", "sub", "rsub", "mul", "div", "pow", "neg", "exp", "log", "sqrt",
    "rsqrt", "abs", "reciprocal", "square", "clamp", "clamp_min",
    "clamp_max", "sigmoid", "tanh", "_to_copy", "clone", "softplus",
    "relu", "exp2", "expm1", "log1p", "sin", "cos"))
TWIN_KEYS = 1 << 16     # recipes kept (Values.recipe_nums)
# Ops that count a bool tensor's true elements (Values.mask), of the mask
# or of a cast of it to a number type (Values._cast_count: h-net's
# dynamic chunking splits the nonzero positions of a pad of its
# boundary mask by `mask.long().sum(-1).tolist()`; a running count too).
MASK_COUNTS = frozenset(("sum", "count_nonzero", "cumsum"))
# Ops that keep a tensor's partly known values (Values._part): those
# that make one (a cat of known and unknown pieces, a constant pad of
# one), the views and copies that carry its elements, a comparison of it with a
# known scalar, and any() and all(), which its known elements may decide.
PART_MAKE = frozenset(("cat", "concat", "constant_pad_nd"))
PART_SAME = frozenset((
    "select", "slice", "view", "_unsafe_view", "reshape", "unsqueeze",
    "squeeze", "clone", "alias", "detach", "t", "transpose", "permute",
    "flatten", "narrow", "unbind", "split", "contiguous", "flip",
    "_to_copy"))
PART_OPS = PART_MAKE | PART_SAME | {"eq", "ne", "lt", "le", "gt", "ge",
                                    "logical_not", "bitwise_not", "any",
                                    "all", "index_select", "index_copy"}
# Writes whose target's every element is written (copy_, fill_ of the
# target view) or some of them (index_copy_, index_put_: marked unknown
# all the same): a blank mirror keeps the target's other elements
# (Values._blank_hold).
UNKNOWN_WRITES = frozenset(("copy_", "fill_", "index_copy_", "index_put_",
                            "index_fill_", "masked_fill_", "scatter_"))
# A bool tensor's complement (~m: at::bitwise_not, logical_not): the
# values Values.mask assumes for one are the other's negation.
NEGATIONS = frozenset(("bitwise_not", "logical_not"))
# Bounds on the number of nonzero elements (Values.nonzero_bound): ops
# whose every nonzero output element comes from a nonzero input element
# at most once (casts, copies, reductions over a dimension: a sum of
# zeros is zero), ops whose output is nonzero only where every tensor
# argument is (a product, a logical and), in-place ops that can only
# make elements zero (the storage's bound stays), and scatters, which
# write at most one element an index.
NZ_KEEP = frozenset((
    "_to_copy", "clone", "abs", "neg", "relu", "sum", "amax", "amin",
    "any", "max", "min", "mean", "nansum", "sign", "square"))
NZ_BOTH = frozenset(("mul", "logical_and", "bitwise_and"))
NZ_SHRINK = frozenset(("mul_", "relu_", "logical_and_", "bitwise_and_",
                       "zero_"))
NZ_SCATTER = frozenset(("scatter_add_", "scatter_", "scatter_add",
                        "scatter", "index_add_", "index_add"))
NZ_COMPARE = {"gt": lambda c: c >= 0, "ge": lambda c: c > 0,
              "lt": lambda c: c <= 0, "le": lambda c: c < 0,
              "ne": lambda c: c == 0, "eq": lambda c: c != 0}
NZ_OPS = NZ_KEEP | NZ_BOTH | NZ_SHRINK | NZ_SCATTER | frozenset(NZ_COMPARE)
# Ops that keep each element's range (views, copies, gathers, reductions
# that pick or average elements).
KEEP = (_known.SAME - {"repeat"}) | {"repeat", "mean", "median",
                                    "nanmedian", "sort", "kthvalue",
                                    "mode", "cummax", "cummin", "stack",
                                    "cat"}


# Ops whose values are some of their input's, at indices: exact input
# values gathered at unknown indices keep their range.
GATHERS = frozenset(("index", "index_select", "gather", "take"))
# Ops through which the sentinel classes of scores (Values._classes) are
# carried: the sums that make them (a score plus a known -1e9 penalty),
# where, cat and stack, and the views, copies and gathers that move them.
OFFSET_MAKE = frozenset(("add", "add_", "sub", "sub_", "where", "cat",
                         "stack"))
OFFSET_MOVE = (_known.SAME - {"max", "min", "amax", "amin"}) | GATHERS | \
    frozenset(("neg", "mul", "mul_", "div", "div_"))

# Operators of other libraries with a data-dependent output size and a
# rule in fake._dynamic.
OP_RULES = frozenset(("torchvision::nms",))

# In-place ops that write values of another argument (position, name)
# into part of their target (Values._partial_write).
PARTIAL_SRC = {"copy_": (1, "src"), "fill_": (1, "value"),
               "index_put_": (2, "values"), "_index_put_impl_": (2, "values"),
               "masked_fill_": (2, "value"), "index_fill_": (3, "value"),
               "index_copy_": (3, "source"), "scatter_": (3, "src")}

# The host bytes that copies from the host keep alive (Values._upload): a
# checkpoint's tensors beyond them are not kept (a large model's would
# double the recording's host memory).
UPLOAD_BYTES = 1 << 30
# The views an _upload entry goes on with (computed on the host tensor:
# no copy).
UPLOAD_VIEWS = frozenset((
    "detach", "alias", "view", "_unsafe_view", "t", "transpose", "permute",
    "select", "slice", "unsqueeze", "squeeze", "expand", "unflatten",
    "flatten", "narrow", "as_strided"))
# Uninitialized tensors: no values until written (Values._blank).
EMPTY = frozenset(("empty", "empty_like", "new_empty", "empty_strided",
                   "new_empty_strided", "empty_permuted"))
# In-place ops that overwrite every element of their target.
FULL = frozenset(("copy_", "fill_", "zero_", "uniform_", "normal_",
                  "random_", "bernoulli_", "exponential_", "geometric_",
                  "log_normal_", "cauchy_"))


def _last_stride(t):
    """The stride of T's last dimension (1 for a 0-dim tensor): with its
    size, what makes a dense tensor's rows the same elements as another
    view's of its storage (a transpose's rows are its columns)."""
    return t.stride(-1) if t.dim() else 1


def _geometry(t):
    """T's shape, strides and storage offset: as_strided's arguments for
    T's elements in a flat copy of its storage."""
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


class _Skip(Exception):
    pass


class Refused(_known.Endless):
    """A one-line stop: an op whose values or sizes cannot be had."""


def program_frame():
    """The program's own frame that asked: its innermost frame outside
    torch and the recorder, typing_extensions (the wrapper of PyTorch's
    functions marked @deprecated) and Triton's launcher, autotuner and
    benchmark (userkernels.py); None if there is none."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if "/torch/" not in fn and "memsim_record" not in fn and \
                not fn.endswith("typing_extensions.py") and \
                "/triton/runtime/" not in fn and \
                not fn.endswith("/triton/testing.py") and \
                not fn.startswith("<frozen") and not fn.startswith("<"):
            return f
        f = f.f_back
    return None


def where():
    """The program's own FILE:LINE that asked (program_frame())."""
    f = program_frame()
    if f is None:
        return "torch"
    return "%s:%d" % (os.path.basename(f.f_code.co_filename), f.f_lineno)


# asserted()'s answers by code object and instruction offset
_ASSERTS = {}


def asserted():
    """The bool that an assert statement's test needs, where the
    program's frame asks for one as that test (`assert (boxes[:, 2:] >=
    boxes[:, :2]).all()`: DETR's generalized_box_iou on its predicted
    boxes), else None.  A failed assert ends the program with
    AssertionError, so every run that gets past it, every run there is a
    peak to predict of, had its test hold: True for `assert t`, False
    for `assert not t`.  The test is the conditional jump the frame is at
    (Python 3.13's TO_BOOL before it) whose way on one side loads
    AssertionError (LOAD_ASSERTION_ERROR; LOAD_COMMON_CONSTANT in 3.14):
    the other side is the answer.  `python -O` has no asserts to ask.
    An assert written out, `if not t: raise AssertionError(...)` (the
    way's first instruction loads the name AssertionError: Aurora's
    FourierExpansion checks its input's range so, under -O too), ends
    the program as surely, and is answered alike."""
    return _at_program_frame(_ASSERTS, _assert_test)


def _at_program_frame(cache, answer):
    """ANSWER(code, offset) for the instruction the program's frame is
    at, kept in CACHE by both; None where there is no program frame."""
    f = program_frame()
    if f is None:
        return None
    key = (f.f_code, f.f_lasti)
    if key not in cache:
        cache[key] = answer(f.f_code, f.f_lasti)
    return cache[key]


def _assert_test(code, lasti):
    """asserted()'s answer for the instruction at offset LASTI of CODE."""
    import dis
    ins = list(dis.get_instructions(code))
    at = {x.offset: i for i, x in enumerate(ins)}
    i = at.get(lasti)
    if i is not None and ins[i].opname == "TO_BOOL":
        i += 1
    if i is None or i >= len(ins):
        return None
    op = ins[i].opname
    if "JUMP" not in op or not op.endswith(("_IF_TRUE", "_IF_FALSE")):
        return None
    on_true = op.endswith("_IF_TRUE")

    def fails(j):
        while j is not None and j < len(ins) and \
                ins[j].opname in ("PUSH_NULL", "NOP"):
            j += 1      # (3.11's NULL before a call of a name)
        return j is not None and j < len(ins) and (
            ins[j].opname == "LOAD_ASSERTION_ERROR" or
            (ins[j].opname == "LOAD_COMMON_CONSTANT" and
             ins[j].argrepr == "AssertionError") or
            (ins[j].opname in ("LOAD_GLOBAL", "LOAD_NAME") and
             ins[j].argval == "AssertionError" and raises(j + 1)))

    def raises(j):
        # (the way goes on straight to its raise: no jump, no return
        # before RAISE_VARARGS)
        for x in ins[j:]:
            if x.opname == "RAISE_VARARGS":
                return True
            if "JUMP" in x.opname or x.opname.startswith("RETURN"):
                return False
        return False
    if fails(i + 1):            # falls through to the raise: jump taken
        return on_true
    if fails(at.get(ins[i].argval)):    # jumps to the raise: falls through
        return not on_true
    return None


# asserted_number()'s answers by code object and instruction offset
_ASSERT_NUMBERS = {}

# the number that makes `x OP c` come out True, and False
_PASSES = {"==": (0, 1), "!=": (1, 0), "<": (-1, 0), "<=": (0, 1),
           ">": (1, 0), ">=": (0, -1)}


def asserted_number(dtype_is_float):
    """The number an .item() must answer where the program's frame
    compares it with a constant as an assert statement's test
    (Lightweight-Segmentation's and awesome-semantic-segmentation's
    mIoU: `assert torch.sum(area_inter > area_union).item() == 0`), else
    None: the value that makes the test hold, as asserted() answers a
    bool (a failed assert ends the program; every run there is a peak
    to predict of got past it).  The item's call, then the constant
    (LOAD_CONST, LOAD_SMALL_INT), COMPARE_OP, and the test's jump."""
    got = _at_program_frame(_ASSERT_NUMBERS, _assert_number)
    if got is None:
        return None
    return float(got) if dtype_is_float else got


def _assert_number(code, lasti):
    """asserted_number()'s answer for the call at offset LASTI of CODE."""
    import dis
    ins = list(dis.get_instructions(code))
    at = {x.offset: i for i, x in enumerate(ins)}
    i = at.get(lasti)
    if i is None or i + 3 >= len(ins) or "CALL" not in ins[i].opname:
        return None
    c, cmp = ins[i + 1], ins[i + 2]
    if c.opname not in ("LOAD_CONST", "LOAD_SMALL_INT") or \
            type(c.argval) not in (int, float) or \
            cmp.opname != "COMPARE_OP":
        return None
    op = cmp.argrepr.replace("bool(", "").rstrip(")")
    if op not in _PASSES:
        return None
    holds = _assert_test(code, ins[i + 3].offset)
    if holds is None:
        return None
    return c.argval + _PASSES[op][0 if holds else 1]


def _empty(t):
    """Whether T has no elements (sizes known: not symbolic)."""
    n = t.numel()
    return type(n) is int and n == 0


def fmt(v):
    if isinstance(v, float):
        return repr(v)
    return str(v)


# The answers of the assumptions fake.py states by kind alone
# (rec.assume(kind), made to name the line here: Values.__init__).
ANSWERS = {"gradscaler:no-overflow": "step taken", "compile:eager": "eager",
           "compile:aot_eager": "aot_autograd",
           "nested:padded": "padded", "isin:no-match": "no match",
           "allclose:true": "true", "host:rng": "not drawn",
           "triton:kernel-not-run": "not run",
           "linalg:workspace": "not recorded",
           "linalg:full-rank": "full rank"}


# The assumptions that give a value the program reads (the others are of
# kernels and modes: cuDNN's finds, compile, nested layouts...).
VALUE_KINDS = ("item:", "host:range", "host:bool", "host:float",
               "host:spread", "host:int", "nonzero", "masked_select", "unique",
               "repeat_interleave", "bincount", "nms", "coalesce", "check:",
               "isin:", "compare:", "finite", "mask:", "scatter:", "range:",
               "routing", "allclose:", "gradscaler:")


def value_kind(kind):
    """Whether assumption KIND gives the program a value (VALUE_KINDS, or
    a comparison taken as equal: NAME:same)."""
    return kind.startswith(VALUE_KINDS) or kind.endswith(":same")


def failure_note(rec):
    """After a script that raised under --values rules: a line that says
    how many values it ran on that the recording assumed, by kind, and
    the last of them, with the mode that computes them; None where none
    was assumed."""
    kinds, last = {}, None
    for row in getattr(rec, "rows", ()):
        if row[0] == "annotate" and row[3] == "assumption":
            kind = row[4].split(" ", 1)[0]
            if value_kind(kind):
                kinds[kind] = kinds.get(kind, 0) + 1
                last = row[4]
    if not kinds:
        return None
    top = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    return ("the script ran on %d value%s the recording assumed (%s%s; the "
            "last: %s); if its error comes of one, --values cpu computes "
            "every value on the CPU instead (slower; docs/"
            "recording-values.md)" % (
                sum(kinds.values()), "" if sum(kinds.values()) == 1 else "s",
                ", ".join("%s %d" % kv for kv in top[:4]),
                ", ..." if len(top) > 4 else "", last.replace(";", ",")))


def assume(rec, kind, value, site=None):
    """Counts assumption KIND (answered VALUE) with an annotate row that
    names the program's line: "KIND FILE:LINE =VALUE"."""
    rec.assumptions[kind] = rec.assumptions.get(kind, 0) + 1
    s = "%s %s =%s" % (kind, site or where(), fmt(value))
    rec.rows.append(["annotate", 0, 0, "assumption",
                     s.replace(",", ";").replace("\n", " ")])


class Range:
    """Each element in [lo, hi] (hi excluded when hi_open); integral: the
    values are integers."""
    __slots__ = ("lo", "hi", "hi_open", "integral")

    def __init__(self, lo, hi, hi_open, integral):
        self.lo, self.hi, self.hi_open, self.integral = lo, hi, hi_open, \
            integral

    def finite(self):
        """Whether both ends are finite numbers (an abs's [0, inf) is
        not: it decides comparisons, answers no value)."""
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    def int_top(self):
        """The largest integer in the range (hi excluded when hi_open;
        inf where the range has no top)."""
        if math.isinf(self.hi):
            return self.hi
        return math.ceil(self.hi) - 1 if self.hi_open else \
            math.floor(self.hi)

    def value(self):
        """The rule's answer: the midpoint (integers: the lower median)."""
        if self.integral:
            lo = math.ceil(self.lo)
            hi = self.int_top()
            if hi < lo:
                return lo
            return lo + (hi - lo) // 2
        return (self.lo + self.hi) / 2.0

    def clip(self, v):
        """V where it lies in the range, else the range's value nearest
        it (an end, or for an open float end the float just inside)."""
        if self.integral:
            if math.isfinite(self.lo):
                v = max(v, math.ceil(self.lo))
            if math.isfinite(self.hi):
                v = min(v, self.int_top())
            return v
        v = max(v, self.lo)
        if v > self.hi or (self.hi_open and v >= self.hi):
            v = math.nextafter(self.hi, -math.inf) if self.hi_open \
                else self.hi
        return v

    def decide(self, op, k, reverse):
        """x OP k (k OP x when reverse) for every x in the range: True,
        False, or None where the range does not decide it."""
        if reverse:
            op = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}.get(op, op)
        lo, hi, ho = self.lo, self.hi, self.hi_open
        if op == "lt":
            if hi < k or (ho and hi <= k):
                return True
            if lo >= k:
                return False
        elif op == "le":
            if hi <= k:
                return True
            if lo > k:
                return False
        elif op == "gt":
            if lo > k:
                return True
            if hi <= k:
                return False
        elif op == "ge":
            if lo >= k:
                return True
            if hi < k or (ho and hi <= k):
                return False
        elif op in ("eq", "ne"):
            if k < lo or hi < k or (ho and hi <= k) or \
                    (self.integral and k != math.floor(k)):
                return op == "ne"
            if self.single() == k:
                # every element is k (x % 1 of integers: the
                # integer-interval support check of torch.distributions)
                return op == "eq"
        return None

    def count(self):
        """How many integers the range holds (an integral one's values),
        0 where none, inf where it has no end."""
        if not self.finite():
            return math.inf if self.lo <= self.hi else 0
        return max(self.int_top() - math.ceil(self.lo) + 1, 0)

    def single(self):
        """The one value the range holds, or None."""
        if not self.finite():
            return None
        if self.integral:
            lo, hi = math.ceil(self.lo), self.int_top()
        elif self.hi_open:
            return None
        else:
            lo, hi = self.lo, self.hi
        return lo if lo == hi else None


def share(u, op, c):
    """The probability that x OP c (a COMPARE op) for x uniform over the
    Range U (its integers where integral), or None (an empty or endless
    range)."""
    if u.integral:
        if not u.finite():
            return None
        lo, n = math.ceil(u.lo), u.count()
        if n <= 0:
            return None

        def upto(x):                # how many of the integers are <= x
            return min(max(math.floor(x) - lo + 1, 0), n)
        lt, le = upto(math.ceil(c) - 1), upto(c)
        got = {"lt": lt, "le": le, "gt": n - le, "ge": n - lt,
               "eq": le - lt, "ne": n - (le - lt)}[op]
        return got / n
    w = u.hi - u.lo
    if not (w > 0 and math.isfinite(w)):
        return None
    f = min(max((c - u.lo) / w, 0.0), 1.0)
    return {"lt": f, "le": f, "gt": 1.0 - f, "ge": 1.0 - f, "eq": 0.0,
            "ne": 1.0}[op]


def apart(a, b):
    """Whether the elements (storage serial, g, r) A and B (Values._elements)
    share no offset: other storages, or r_a - r_b not a multiple of
    gcd(g_a, g_b)."""
    if a[0] is None or b[0] is None:
        return False
    if a[0] != b[0]:
        return True
    g = math.gcd(a[1], b[1])
    return (a[2] - b[2]) % g != 0 if g else a[2] != b[2]


def distinct(n, k):
    """The expected number of distinct values among K independent draws,
    each uniform over N values: n (1 - (1 - 1/n)^k), rounded up."""
    if n <= 0 or k <= 0:
        return 0
    return min(k, n, math.ceil(n * -math.expm1(k * math.log1p(-1.0 / n))
                               - 1e-9)) if n > 1 else 1


class HostSide:
    """A context manager for the recorder's own computations on real host
    tensors (a host value, a shadow): UNSET (unset_fake_temporarily) and,
    where the program made another device the default one
    (torch.set_default_device("cuda"), `with torch.device("meta")`:
    torch.utils._device's DeviceContext, whose device CURRENT_DEVICE
    names), the CPU the default for the block, so that a factory with no
    device (torch.full, torch.empty) makes a host tensor as the recorder
    means, not a GPU one no kernel can run.  With ONE_THREAD, on one of
    PyTorch's intra-op threads, the number before it restored after."""
    __slots__ = ("torch", "unset", "one_thread", "ctx", "dev", "n")

    def __init__(self, torch, unset, one_thread=False):
        self.torch = torch
        self.unset = unset
        self.one_thread = one_thread

    def __enter__(self):
        torch = self.torch
        self.ctx = self.unset()
        self.ctx.__enter__()
        dv = sys.modules.get("torch.utils._device")
        d = getattr(dv, "CURRENT_DEVICE", None)
        self.dev = None
        if d is not None and torch.device(d).type != "cpu":
            self.dev = torch.device("cpu")
            self.dev.__enter__()
        self.n = torch.get_num_threads() if self.one_thread else 1
        if self.n != 1:
            torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        if self.n != 1:
            self.torch.set_num_threads(self.n)
        if self.dev is not None:
            self.dev.__exit__(*exc)
        return self.ctx.__exit__(*exc)


class Values:
    """Shadows and ranges of the fake tensors (the module's docstring)."""

    def __init__(self, torch, rec, kn):
        from torch.utils.weak import WeakIdKeyDictionary
        from torch._subclasses.fake_tensor import FakeTensor, \
            unset_fake_temporarily
        self.torch = torch
        self.rec = rec
        self.kn = kn
        opt = rec.opt
        self.cpu = getattr(opt, "values", "rules") == "cpu"
        self.limit = None if self.cpu else SHADOW_LIMIT
        self.small_sym = {}  # (numel's expression, index dtype) -> small
        self.imbalance = float(getattr(opt, "routing_imbalance", 1.0))
        self.shadow = WeakIdKeyDictionary()  # fake -> (real, skey, gen)
        # id(storage) -> {fake -> [its shadow, the shadow's count of
        # nonzeros, the most of a row's (None: not counted yet)]}, until
        # an op that writes takes the storage: _shadow_nz
        self.shadow_nz = {}
        self.nz_writing = True   # whether the op in after() writes
        self.ranges = WeakIdKeyDictionary()  # fake -> (Range, skey, gen)
        # bool fake -> ((source skey, source _where), op, c, skey, gen): a
        # comparison of the source with a constant (Values._left_by_mask)
        self.cmps = WeakIdKeyDictionary()
        # fake -> (sentinel classes, skey, gen): Values._classes
        self.offs = WeakIdKeyDictionary()
        # fake -> (Range, skey, gen): its elements independent draws, each
        # uniform over Range; fake -> (p, skey, gen): its elements 0 or 1
        # (false or true), each 1 with probability p (Values._draws)
        self.unif = WeakIdKeyDictionary()
        self.probs = WeakIdKeyDictionary()
        # fake -> (shape, skey, gen): the (n, d) output of nonzero of a
        # mask of SHAPE whose values are unknown (fake._dynamic's count
        # rule); its column k indexes dimension k (Values.nonzero_column)
        self.nzidx = WeakIdKeyDictionary()
        # fake -> ((a, b, folded), skey, gen): its elements a + b Z of
        # independent standard normal draws Z (|b Z| where folded: an
        # abs of them, a 0); fake mask -> ((key, lo, hi), skey,
        # gen): the mask is lo <= Z <= hi of the draws of the tensor KEY
        # names (Values._normal_draws)
        self.norms = WeakIdKeyDictionary()
        self.nints = WeakIdKeyDictionary()
        # fake -> (draws, skey, gen): which random draws its elements
        # come from, a tuple of (serial of a random op's output's storage
        # (Values._serial), g, r): the elements at offsets r + g*i of that storage (g 0: the
        # one at r; Values._draws' products of independent masks)
        self.origins = WeakIdKeyDictionary()
        # fake D -> ((K, sk, su, u, serial), skey, gen): D = sk K + su U,
        # K a known tensor, U independent draws uniform over the Range u
        # (Values._shifted); fake mask -> ((serial, lo, hi), skey, gen):
        # the mask is lo <= D <= hi of that D; fake mask -> (map, skey,
        # gen): each element's probability of being true, a real tensor
        # that broadcasts to the mask (Values._draws_kept)
        self.shifts = WeakIdKeyDictionary()
        self.preds = WeakIdKeyDictionary()
        self.pmaps = WeakIdKeyDictionary()
        # fake bool -> ((a weak reference to its complement, the
        # complement's skey and gen), skey, gen): m and ~m, both of
        # unknown values (Values._negation)
        self.negs = WeakIdKeyDictionary()
        # fake -> ((a weak reference to a bool mask of unknown values, the
        # mask's skey and gen), skey, gen): the fake is the mask cast to
        # a number type, neither written since (Values._cast_count)
        self.casts = WeakIdKeyDictionary()
        # fake -> ((values, known), skey, gen): a tensor some of whose
        # elements are known, its values and which (Values._part)
        self.parts = WeakIdKeyDictionary()
        # fake -> ((values, guessed), skey, gen): the host's answers for
        # some of a tensor's unknown elements: the value of the range of
        # the piece a cat took each from (Values._guess); never known
        # values (the mask rules still assume the unknown elements)
        self.guesses = WeakIdKeyDictionary()
        self.gen = {}                        # id(storage) -> unmirrored writes
        # id(storage) -> (Range, gen): the range of a whole storage that
        # writes into part of it kept (_partial_write)
        self.srange = {}
        # id(storage) -> (value, a bool tensor over the storage's
        # elements, the write count): the elements that writes of one
        # known value into part of it set, while no other write has
        # touched it (Values._pin; topk leaves them out: _pinned)
        self.pins = {}
        # id(storage) -> (at most how many of its elements are nonzero,
        # the write count it holds at, at most how many in each row of
        # its last dimension or None, that dimension's size): while no
        # other write has touched it (nonzero_bound, row_bound)
        self.nzs = {}
        # id(storage) -> (the write count, the row length n): the indices
        # sort (argsort) returned along the last dimension, each row a
        # permutation of 0..n-1, while no other write has touched it: a
        # row compared with one value has at most one element equal
        # (_perm_eq)
        self.perms = {}
        # id(storage) -> (the empty tensor made with it, a weak
        # reference; the storage's elements; None or its values and its
        # written elements (flat, over the storage); the write count):
        # an uninitialized tensor the program writes part by part with
        # known values (Values._blank_write)
        self.blank = {}
        # fake -> (the host tensor whose values it holds, that tensor's
        # version counter then, skey, gen): a copy from the host too
        # large for a shadow (Values._upload)
        self.uploads = WeakIdKeyDictionary()
        # id(storage) -> {recipe: real values} of reductions of its
        # elements that the host read (Values._recipe), and id(storage)
        # of a reduction's output -> (id(its input's storage), recipe)
        # (keyed by storage: the host reads a .detach() of it)
        self.answers = {}
        self.recipes = {}
        # id(storage) -> (recipe, write count) of the elementwise op that
        # made it (Values._twin), and id(storage) -> a serial number of
        # the storage (an id a dead storage had is a new serial)
        self.twin_of = {}
        self.serials = {}
        self.recipe_nums = {}
        self.written = {}
        self.Fake = FakeTensor
        # The recorder's own computations on real CPU tensors: out of the
        # fake mode and, under the rules (small tensors only, at most
        # SHADOW_LIMIT or INDEX_LIMIT elements), on one intra-op thread:
        # PyTorch's CPU kernels split no work that small (their grain,
        # at::internal::GRAIN_SIZE, is 32768 elements), but entering its
        # thread pool for each one cost makeMoE's router ms a softmax on a
        # busy two-core machine (the pool's threads wait for cores).
        self.unset = functools.partial(HostSide, torch,
                                       unset_fake_temporarily, not self.cpu)
        # routing(): its answer for each (shape, dtype, n, d), copied out
        self.routes = {}
        self.pending = None     # (fake outputs, real outputs) of _dynamic
        self.fresh = {}
        self.in_func = False
        self.no_kernel = set()
        # OpOverload -> "dynamic" (an aten op with a data-dependent output
        # size), "static" (any other aten op), "other" (another library's)
        self.aten_ops = {}
        g = torch.Generator()
        g.manual_seed(0)
        self.rng = g
        # rec.assume(kind) (fake.py, known.py): the row names the line and
        # the answer too.
        def assume_kind(kind, value=None):
            assume(rec, kind, ANSWERS.get(kind, "") if value is None
                   else value)
        rec.assume = assume_kind
        # f"{loss:.4f}": Tensor.__format__ formats a 0-dim tensor's item()
        # only for plain tensors; the same for fake ones (the value by the
        # rules above).
        if "__format__" not in FakeTensor.__dict__:
            def __format__(self, spec):
                if self.dim() == 0:
                    return self.item().__format__(spec)
                return torch.Tensor.__format__(self, spec)
            FakeTensor.__format__ = __format__

    def seed_cuda(self, seed):
        """torch.cuda.manual_seed(SEED) / manual_seed_all(SEED), which
        torch.manual_seed calls: the GPU's draws start again from SEED
        (CUDAGeneratorImpl::set_current_seed), from the recorder's own
        generator (_run) seeded so; its numbers are not the GPU's."""
        self.rng.manual_seed(int(seed))

    def lost(self, name, e):
        """An error in this module's own bookkeeping (not the program's):
        every value is forgotten, the rules take over; one assumption
        values:lost names the op."""
        self.shadow.clear()
        self.ranges.clear()
        self.offs.clear()
        self.srange.clear()
        self.pins.clear()
        self.nzs.clear()
        self.perms.clear()
        self.shadow_nz.clear()
        self.pending = None
        self.fresh = {}
        if name not in self.no_kernel:
            self.no_kernel.add(name)
            assume(self.rec, "values:lost", name, site="%s (%s: %s)" % (
                where(), type(e).__name__, str(e).split("\n")[0][:60]))

    # -- lookups -----------------------------------------------------------
    def _skey(self, t):
        try:
            return id(t.untyped_storage())
        except Exception:
            return None

    def _dying_key(self, t):
        """_skey of T where what is kept under it (srange, nzs) goes
        when its storage dies, or None: a CUDA storage's, whose death
        dispatch reports (storage_died).  A fake CPU tensor's storage
        (`.cpu()` of a fake, before the host gets its values) dies
        unreported, and the id went to a later CUDA storage with the
        CPU one's bound: llama2.c's rotary table (sin 0 = 0) bounded an
        RMSNorm's mean, a guard on the batch size under --symbolic."""
        if t.device.type != "cuda":
            return None
        return self._skey(t)

    def _small(self, t):
        """Whether T is small enough for a shadow or a range under the
        rules (floating: SHADOW_LIMIT elements; integer, bool: INDEX_LIMIT,
        for token ids, masks and routing)."""
        if self.limit is None:
            return True
        n = t.numel()
        index = not t.dtype.is_floating_point and not t.dtype.is_complex
        if type(n) is not int:
            # --symbolic: a size's tests are guards (symbolic.py).  The
            # first test of an expression adds them to the ShapeEnv; a
            # test again of the same expression adds none (the guards
            # decide it) but costs SymNode arithmetic through sympy each
            # op, so its answer is kept.
            key = (n.node.expr, index)
            got = self.small_sym.get(key)
            if got is None:
                got = self.small_sym[key] = bool(
                    n <= self.limit or (n <= INDEX_LIMIT and index))
            return got
        return n <= self.limit or (n <= INDEX_LIMIT and index)

    def real(self, t):
        """T's values as a real CPU tensor, or None."""
        if not isinstance(t, self.torch.Tensor):
            return None
        if not isinstance(t, self.Fake):
            return t
        ent = self.shadow.get(t)
        if ent is None:
            c = getattr(t, "constant", None)
            if c is not None:
                with self.unset():
                    return c.clone()
            if _empty(t):
                # no elements: every value known (a sum over an empty
                # slice is 0: pykan's prune counts the multiplication
                # nodes of a layer that has none, mask[n:].sum().item())
                with self.unset():
                    return self.torch.empty(tuple(t.shape), dtype=t.dtype)
            v = self.kn.value(t)
            if v is not _known.UNKNOWN and self._small(t):
                with self.unset():
                    return self.torch.full(tuple(t.shape), v,
                                           dtype=t.dtype)
            return None
        k = self._skey(t)
        if k != ent[1] or self.gen.get(k, 0) != ent[2]:
            del self.shadow[t]
            return None
        return ent[0]

    def _has(self, t):
        """Whether self.real(T) of a fake T gives values, none made."""
        ent = self.shadow.get(t)
        if ent is not None:
            k = self._skey(t)
            return k == ent[1] and self.gen.get(k, 0) == ent[2]
        if getattr(t, "constant", None) is not None or _empty(t):
            return True
        return self.kn.value(t) is not _known.UNKNOWN and self._small(t)

    def range(self, t):
        if t in self.ranges:
            r = self._kept(self.ranges, t)
            if r is not None:
                return r
        # (a tensor whose own range a write into part of it made stale:
        # the range kept for its storage, _partial_write)
        return self._storage_range(self._skey(t)) if self.srange \
            else None

    def _kept(self, d, t):
        """What D (ranges, unif, probs) keeps for T while T's storage has
        had no other write, or None (a stale entry goes)."""
        ent = d.get(t)
        if ent is None:
            return None
        k = self._skey(t)
        if k != ent[1] or self.gen.get(k, 0) != ent[2]:
            del d[t]
            return None
        return ent[0]

    def uniform(self, t):
        """The Range over which each of T's elements is an independent
        uniform draw (Values._draws), or None."""
        return self._kept(self.unif, t) if self.unif else None

    def normal(self, t):
        """(a, b, folded): each of T's elements is a + b Z of an
        independent standard normal draw Z, |b Z| where folded
        (Values._normal_draws), or None."""
        return self._kept(self.norms, t) if self.norms else None

    def probability(self, t):
        """The probability that each element of T is nonzero, where T's
        elements are independent random draws (Values._draws), or None."""
        return self._kept(self.probs, t) if self.probs else None

    def _keep(self, d, t, v):
        """Keeps V in D (ranges, unif, probs) for the fake T, at its
        storage's write count (_kept)."""
        if isinstance(t, self.Fake) and v is not None:
            k = self._skey(t)
            if k is not None:
                d[t] = (v, k, self.gen.get(k, 0))

    def _one(self, t):
        """The one value every element of T holds (known, or its
        shadow's), or None."""
        v = self.kn.value(t)
        if v is not _known.UNKNOWN:
            return v
        r = self.real(t)
        if r is None or r.numel() == 0 or r.dtype.is_complex:
            return None
        with self.unset():
            lo, hi = r.min().item(), r.max().item()
        return lo if lo == hi else None

    def _elements(self, t):
        """(storage id, g, r) of T: its elements lie at storage offsets
        r + g*i, g the gcd of its strides (of sizes above 1), r its
        offset modulo g (g 0: one element, at r)."""
        g = 0
        for st, sz in zip(t.stride(), t.shape):
            if sz > 1:
                g = math.gcd(g, abs(st))
        off = t.storage_offset()
        return (self._serial(t), g, off % g if g else off)

    def _serial(self, t):
        """A number of T's storage of its own while it lives (Values.
        serials: storage_died drops it, so a later storage given the
        same id gets another), or None."""
        k = self._skey(t)
        if k is None:
            return None
        if k not in self.serials:
            self.serials[k] = next(_SERIAL)
        return self.serials[k]

    def _constant(self, args):
        """The op's second argument (a Python number or a tensor of one
        known value) as a finite int or float, else None (a bool too)."""
        c = args[1] if len(args) > 1 else None
        c = self.kn.value(c) if isinstance(c, self.torch.Tensor) else c
        if isinstance(c, bool) or not isinstance(c, (int, float)) or \
                not math.isfinite(c):
            return None
        return c

    def _draws(self, name, args, kwargs, outs, targets):
        """_draws_kept, then which draws the output's elements come from
        (Values.origins): a random op's output its own elements; a view
        into the draws' storage its own elements there; anything else
        that _draws_kept kept a distribution for, its input's draws."""
        self._draws_kept(name, args, kwargs, outs, targets)
        os_ = targets or [o for o in outs if isinstance(o, self.Fake)]
        if not os_ or not isinstance(os_[0], self.Fake) or \
                os_[0].device.type != "cuda":
            return
        o = os_[0]
        if not all(type(d) is int for d in o.shape):
            return      # (--symbolic sizes: its strides' gcd a guard)
        if self._kept(self.origins, o) is not None or \
                (self.probability(o) is None and self.uniform(o) is None
                 and self.normal(o) is None):
            return
        if name in UNIFORM or name in NORMAL or \
                name in ("bernoulli", "bernoulli_"):
            self._keep(self.origins, o, (self._elements(o),))
            return
        t0 = args[0] if args else None
        src = self._kept(self.origins, t0) \
            if isinstance(t0, self.Fake) else None
        if src is None:
            return
        if len(src) == 1 and src[0][0] == self._serial(o):
            src = (self._elements(o),)       # a view into the draws
        self._keep(self.origins, o, src)

    def _draws_kept(self, name, args, kwargs, outs, targets):
        """Random draws followed through the ops (the rules mode): a
        random op's elements are independent, each uniform over its range
        (UNIFORM) or, bernoulli's, 1 with its probability p; views,
        copies, casts and gathers keep each element's distribution, a
        constant added, subtracted or multiplied moves a continuous
        range (integers: added or subtracted); a comparison with a
        constant is true with the probability share() gives, its
        negation with 1 - p.  Values.mask and Values.count count such a
        mask's true elements with its probability, not
        --dynamic-fraction: `torch.rand(n, device="cuda") < 0.15` holds
        15% of n, as on the GPU in expectation.  Whatever the size (only
        what random ops made is kept)."""
        torch = self.torch
        os_ = targets or [o for o in outs if isinstance(o, self.Fake)]
        # (a CUDA tensor's only: a fake CPU one is a module's parameter
        # initialised under the fake mode, whose uniform_ would keep every
        # later op off _after's fast path, and add guards under
        # --symbolic)
        if not os_ or not isinstance(os_[0], self.Fake) or \
                os_[0].device.type != "cuda":
            return
        o = os_[0]
        if name in UNIFORM:
            self._keep(self.unif, o,
                       random_range(torch, name, args, kwargs, o))
            return
        if name in NORMAL:
            # (not of --symbolic sizes: a kept draw takes every later op
            # off _after's fast path, whose computations on symbolic
            # shapes lose the values and refuse the recording)
            if o.dtype.is_floating_point and \
                    all(type(d) is int for d in o.shape):
                self._keep(self.norms, o,
                           normal_params(torch, name, args, kwargs))
            return
        if name in ("bernoulli", "bernoulli_"):
            # bernoulli(self) draws with self's probabilities, bernoulli(
            # self, p) and bernoulli_(self, p) with p's (a float, or a
            # tensor of one known value)
            pa = args[1] if len(args) > 1 else kwargs.get("p")
            src = args[0] if pa is None and name == "bernoulli" else pa
            v = self._one(src) if isinstance(src, torch.Tensor) else src
            if isinstance(v, (int, float)) and not isinstance(v, bool) and \
                    0.0 <= v <= 1.0:
                self._keep(self.probs, o, v)
            return
        t0 = args[0] if args else None
        if not isinstance(t0, self.Fake):
            return
        base = name[:-1] if name.endswith("_") and \
            not name.startswith("_") else name
        base = _known.ALIASES.get(base, base)
        if self._shifted(base, args, kwargs, o):
            return
        if self._normal_draws(base, args, kwargs, o):
            return
        u, p = self.uniform(t0), self.probability(t0)
        if u is None and p is None:
            return
        if base in ("mul", "bitwise_and", "logical_and") and \
                p is not None and len(args) > 1 and \
                isinstance(args[1], self.Fake):
            # two masks of independent draws (no draw in both: other
            # random ops, or elements of one that no offset shares, as a
            # random tensor's two columns): both true with p1 p2
            # (ab94's `(shifts[:, 0] == sy) & (shifts[:, 1] == sx)`)
            p1 = self.probability(args[1])
            d0 = self._kept(self.origins, t0)
            d1 = self._kept(self.origins, args[1])
            q0 = self._kept(self.preds, t0)
            q1 = self._kept(self.preds, args[1])
            if q0 is not None and q1 is not None and \
                    q0[0][4] == q1[0][4]:
                # two intervals of the same D: both hold in their
                # intersection
                self._pred(o, d0, q0[0], max(q0[1], q1[1]),
                           min(q0[2], q1[2]))
                return
            if p1 is not None and d0 and d1 and \
                    all(apart(a, b) for a in d0 for b in d1):
                m0, m1 = self._pmap(t0, p), self._pmap(args[1], p1)
                with self.unset():
                    m = m0 * m1
                    pm = float(m.expand(tuple(o.shape)).mean()) \
                        if m.dim() and o.numel() and \
                        all(type(d) is int for d in o.shape) else p * p1
                self._keep(self.probs, o, pm)
                if m.dim():
                    self._keep(self.pmaps, o, m)
                self._keep(self.origins, o, d0 + d1)
                return
        c = self._constant(args)
        if base in COMPARE:
            if u is not None and c is not None:
                self._keep(self.probs, o, share(u, base, c))
            elif u is not None and u.integral and base in ("eq", "ne") \
                    and len(args) > 1 and isinstance(args[1], self.Fake):
                # two tensors of uniform integers, each element a draw of
                # its own (not the same elements: another storage, or
                # another offset in it): equal with probability
                # overlap / (n1 n2) (PyG's add_remaining_self_loops,
                # `edge_index[0] != edge_index[1]` of random edges)
                u1 = self.uniform(args[1])
                if u1 is None or not u1.integral:
                    return
                if self._skey(t0) == self._skey(args[1]) and \
                        t0.storage_offset() == args[1].storage_offset():
                    if t0.stride() == args[1].stride():
                        # the same elements: all equal
                        self._keep(self.probs, o, float(base == "eq"))
                    return
                n, n1 = u.count(), u1.count()
                if n <= 0 or n1 <= 0:
                    return
                common = min(u.int_top(), u1.int_top()) - \
                    max(math.ceil(u.lo), math.ceil(u1.lo)) + 1
                eq = max(0, common) / (n * n1)
                self._keep(self.probs, o, eq if base == "eq" else 1.0 - eq)
        elif base in DRAWN:
            m = self._kept(self.pmaps, t0) if self.pmaps else None
            if m is not None:
                # each element's own probability: kept by a copy or cast
                # of the same elements, lost by any other view or gather
                if base in ("clone", "detach", "alias", "_to_copy", "to",
                            "contiguous", "bool", "float", "half",
                            "long", "int", "lift_fresh_copy") and \
                        tuple(o.shape) == tuple(t0.shape):
                    self._keep(self.probs, o, p)
                    self._keep(self.pmaps, o, m)
                return
            if p is not None:
                self._keep(self.probs, o, p)     # (0 and 1 cast are 0 and 1)
            if u is None or o.dtype == torch.bool:
                return
            if not o.dtype.is_floating_point and not u.integral:
                # a cast to integers truncates: uniform over them only
                # from [i, j) of integers i >= 0
                if u.lo < 0 or not u.hi_open or \
                        not float(u.lo).is_integer() or \
                        not float(u.hi).is_integer():
                    return
                u = Range(u.lo, u.hi - 1, False, True)
            self._keep(self.unif, o, u)
        elif base in ("logical_not", "bitwise_not") and p is not None and \
                o.dtype == torch.bool:
            self._keep(self.probs, o, 1.0 - p)
        elif u is not None and c is not None and \
                base in ("add", "sub", "rsub", "mul", "div") and \
                kwargs.get("rounding_mode") is None:
            c *= kwargs.get("alpha", 1) if base in ("add", "sub") else 1
            if base in ("add", "sub", "rsub"):
                sign = -1 if base == "rsub" else 1
                c = -c if base == "sub" else c
                if u.integral and not float(c).is_integer():
                    return
                lo, hi = sorted((sign * u.lo + c, sign * u.hi + c))
                self._keep(self.unif, o, Range(
                    lo, hi, u.hi_open and sign > 0, u.integral))
            elif not u.integral and c != 0:
                c = c if base == "mul" else 1.0 / c
                lo, hi = sorted((u.lo * c, u.hi * c))
                self._keep(self.unif, o, Range(lo, hi, u.hi_open, False))

    def nonzero_indices(self, out, shape):
        """OUT is nonzero's (n, d) output for a mask of SHAPE whose values
        are unknown, counted by the rule (fake._dynamic)."""
        if len(shape) > 1 and all(type(d) is int for d in shape):
            self._keep(self.nzidx, out, tuple(shape))

    def nonzero_column(self, args, outs):
        """select(idx, 1, k) of such an output: the indices of the true
        elements along dimension k, as the count rule spreads them
        evenly over the mask (Values.mask): uniform over [0, shape[k]),
        so that `idx[:, 0] == i` keeps the i-th row's share (1 / rows),
        not --dynamic-fraction of every row's (segment-anything's
        mask_to_rle_pytorch: the change indices of each of its masks)."""
        t0 = args[0] if args else None
        o = outs[0] if outs else None
        if not isinstance(t0, self.Fake) or not isinstance(o, self.Fake) \
                or len(args) < 3 or t0.dim() != 2:
            return
        shape = self._kept(self.nzidx, t0)
        dim, k = args[1], args[2]
        if shape is None or type(dim) is not int or type(k) is not int \
                or dim % 2 != 1 or not -len(shape) <= k < len(shape):
            return
        self._keep(self.unif, o, Range(0, shape[k], True, True))

    def _pmap(self, t, p):
        """Each element's probability of mask T being true: its kept map,
        else its probability P everywhere (a 0-d tensor)."""
        m = self._kept(self.pmaps, t) if self.pmaps else None
        if m is not None:
            return m
        with self.unset():
            return self.torch.tensor(float(p), dtype=self.torch.float64)

    def _shifted(self, base, args, kwargs, o):
        """Draws shifted by known values, and comparisons of them: D =
        K - U, U - K or K + U (sub, rsub, add of two tensors, one of
        known values K, one of draws U uniform over a Range) is kept as
        such (shifts); D OP c (a COMPARE op but ne, c a constant) is the
        interval lo <= D <= hi of it (preds), each element true with the
        share of U's range that puts K's element there (pmaps), the mask
        as a whole with their mean (probs): hlb-CIFAR10's
        make_random_square_masks, `arange(H).view(1, 1, H, 1) -
        center.view(-1, 1, 1, 1)` of centers random_(lo, hi), then `(d
        >= -(s // 2) + e) * (d <= s // 2)`: s of the H rows of every
        image, whatever its center.  True where handled."""
        torch = self.torch
        if not all(type(d) is int for d in o.shape):
            return False        # (--symbolic sizes: the rules as before)
        if base in ("sub", "rsub", "add") and len(args) > 1 and \
                isinstance(args[1], self.Fake) and \
                kwargs.get("alpha", 1) == 1:
            a, b = args[0], args[1]
            ua, ub = self.uniform(a), self.uniform(b)
            if (ua is None) == (ub is None):
                return False
            uu, kt = (ua, b) if ua is not None else (ub, a)
            if not self._small(kt) or \
                    self.kn.value(kt) is not _known.UNKNOWN:
                return False    # (one value: the constant's rule below)
            k = self.real(kt)
            if k is None or k.dtype.is_complex or k.dtype == torch.bool:
                return False
            # D = sa a + sb b
            sa, sb = {"sub": (1, -1), "rsub": (-1, 1), "add": (1, 1)}[base]
            sk, su = (sb, sa) if ua is not None else (sa, sb)
            if uu.integral and k.dtype.is_floating_point:
                return False
            src = self._kept(self.origins, a if ua is not None else b)
            with self.unset():
                k = k.to(torch.float64)
            self._keep(self.shifts, o, (k, sk, su, uu, next(_SERIAL)))
            if src:
                self._keep(self.origins, o, src)
            return True
        if base in COMPARE and base != "ne":
            sh = self._kept(self.shifts, args[0]) if self.shifts else None
            if sh is None:
                return False
            c = self._constant(args)
            if c is None:
                return True
            inf = math.inf
            if sh[3].integral:
                lo, hi = {"ge": (math.ceil(c), inf),
                          "gt": (math.floor(c) + 1, inf),
                          "le": (-inf, math.floor(c)),
                          "lt": (-inf, math.ceil(c) - 1),
                          "eq": (c, c) if float(c).is_integer()
                          else (1, 0)}[base]
            else:
                if base == "eq":
                    return True
                lo, hi = (c, inf) if base in ("ge", "gt") else (-inf, c)
            self._pred(o, self._kept(self.origins, args[0]), sh, lo, hi)
            return True
        return False

    def _normal_draws(self, base, args, kwargs, o):
        """Normal draws followed through the ops, as _draws_kept follows
        uniform ones: X = a + b Z (norms) of a randn's, randn_like's or
        normal_'s Z, kept by views, copies and gathers (DRAWN) into
        floating tensors, moved by a constant added, subtracted,
        multiplied or divided by, folded by abs (a 0); X OP c (a COMPARE op, c a constant) is
        Z in an interval (nints), true with the standard normal's
        probability of it; two such masks of the same tensor's elements
        anded are Z in both intervals (nflows' splines: `inside =
        (inputs >= -tail_bound) & (inputs <= tail_bound)` of
        flow.sample's randn holds 99.73% of them at a bound of 3, not
        --dynamic-fraction).  True where handled."""
        t0 = args[0]
        if not all(type(d) is int for d in o.shape) or \
                not all(type(d) is int for d in t0.shape):
            return False        # (--symbolic sizes: the rules as before)
        if base in ("mul", "bitwise_and", "logical_and") and self.nints \
                and len(args) > 1 and isinstance(args[1], self.Fake):
            i0 = self._kept(self.nints, t0)
            i1 = self._kept(self.nints, args[1])
            if i0 is None or i1 is None or i0[0] != i1[0]:
                return False
            lo, hi = max(i0[1], i1[1]), min(i0[2], i1[2])
            self._keep(self.nints, o, (i0[0], lo, hi))
            self._keep(self.probs, o, normal_between(lo, hi))
            return True
        nd = self.normal(t0)
        if nd is None:
            return False
        a, b, folded = nd
        if base in DRAWN:
            if o.dtype.is_floating_point:
                self._keep(self.norms, o, nd)
            return True
        if base == "abs":
            if a == 0 and o.dtype.is_floating_point:
                self._keep(self.norms, o, (0.0, abs(b), True))
            return True
        c = self._constant(args)
        if c is None:
            return True
        if folded:
            # |b Z|: scaled by a positive constant, or compared
            if base in ("mul", "div") and c > 0 and \
                    o.dtype.is_floating_point:
                self._keep(self.norms, o, (0.0, b * c if base == "mul"
                                           else b / c, True))
            elif base in ("lt", "le", "gt", "ge"):
                w = max(c / b, 0.0)
                p = normal_between(-w, w)
                self._keep(self.probs, o, p if base in ("lt", "le")
                           else 1.0 - p)
            elif base in ("eq", "ne"):
                self._keep(self.probs, o, float(base == "ne"))
            return True
        if base in ("add", "sub", "rsub", "mul", "div") and \
                kwargs.get("rounding_mode") is None and \
                o.dtype.is_floating_point:
            al = kwargs.get("alpha", 1)
            if base == "add":
                nd = (a + al * c, b, False)
            elif base == "sub":
                nd = (a - al * c, b, False)
            elif base == "rsub":            # c - alpha X
                nd = (c - al * a, -al * b, False)
            elif base == "mul":
                nd = (a * c, b * c, False)
            elif c != 0:
                nd = (a / c, b / c, False)
            else:
                return True
            if nd[1] != 0:
                self._keep(self.norms, o, nd)
            return True
        if base in COMPARE and b != 0:
            if base in ("eq", "ne"):
                self._keep(self.probs, o, float(base == "ne"))
                return True
            # a + b Z OP c: Z OP (c - a) / b, the other way for b < 0
            z = (c - a) / b
            up = (base in ("gt", "ge")) == (b > 0)
            lo, hi = (z, math.inf) if up else (-math.inf, z)
            key = (self._serial(t0), t0.storage_offset(), tuple(t0.stride()),
                   tuple(t0.shape), self.gen.get(self._skey(t0), 0))
            self._keep(self.nints, o, (key, lo, hi))
            self._keep(self.probs, o, normal_between(lo, hi))
            return True
        return True

    def _pred(self, o, src, sh, lo, hi):
        """Mask O is lo <= D <= hi of D's shift SH = (K, sk, su, u,
        serial): each element true with the share of u's values that
        put sk K + su U there."""
        torch = self.torch
        k, sk, su, u = sh[0], sh[1], sh[2], sh[3]
        with self.unset():
            # U in [a, b]: (lo - sk K) / su .. (hi - sk K) / su
            a, b = (lo - sk * k) / su, (hi - sk * k) / su
            a, b = torch.minimum(a, b), torch.maximum(a, b)
            if u.integral:
                n = u.count()
                if n <= 0:
                    return
                got = torch.clamp(
                    torch.minimum(torch.floor(b), torch.tensor(
                        float(u.int_top()), dtype=torch.float64)) -
                    torch.maximum(torch.ceil(a), torch.tensor(
                        float(math.ceil(u.lo)), dtype=torch.float64)) + 1,
                    min=0) / n
            else:
                w = u.hi - u.lo
                if not (w > 0 and math.isfinite(w)):
                    return
                got = torch.clamp(torch.clamp(b, max=u.hi) -
                                  torch.clamp(a, min=u.lo), min=0) / w
            pm = float(got.expand(tuple(o.shape)).mean()) if o.numel() \
                else 0.0
        self._keep(self.preds, o, (sh, lo, hi))
        self._keep(self.pmaps, o, got)
        self._keep(self.probs, o, pm)
        if src:
            self._keep(self.origins, o, src)

    def storage_died(self, k):
        """Storage K (its id) is gone: the range kept for it and its write
        count go too, or a storage given the same id later would inherit
        them (PyTorch Geometric's pooled batch vector took a dead zeros
        buffer's range [0, 0]: every graph in one)."""
        self.srange.pop(k, None)
        self.pins.pop(k, None)
        self.gen.pop(k, None)
        self.nzs.pop(k, None)
        self.perms.pop(k, None)
        self.shadow_nz.pop(k, None)
        self.blank.pop(k, None)
        self.answers.pop(k, None)
        self.recipes.pop(k, None)
        self.twin_of.pop(k, None)
        self.serials.pop(k, None)

    def _storage_range(self, k):
        """The range _partial_write kept for storage K, while no other
        write has touched it since (forgotten once one has)."""
        ent = self.srange.get(k)
        if ent is None:
            return None
        if self.gen.get(k, 0) != ent[1]:
            del self.srange[k]
            return None
        return ent[0]

    def _set(self, t, r):
        if not isinstance(t, self.Fake) or not isinstance(r, self.torch.Tensor):
            return
        if tuple(r.shape) != tuple(t.shape) or r.dtype != t.dtype:
            return
        k = self._skey(t)
        if k is None:
            return
        self.ranges.pop(t, None)
        self.shadow[t] = (r, k, self.gen.get(k, 0))

    def _values_range(self, t):
        """The range of T's exact values (a real tensor or a shadow), or
        None: none known, empty, or not real numbers."""
        r = self.real(t)
        if r is None or r.numel() == 0 or r.dtype.is_complex:
            return None
        with self.unset():
            lo, hi = r.min().item(), r.max().item()
        if isinstance(lo, float) and not (math.isfinite(lo) and
                                          math.isfinite(hi)):
            return None
        return Range(lo, hi, False, not r.dtype.is_floating_point)

    def _gathered_range(self, t):
        """The range of values picked from T's exact values at unknown
        indices (a gather's, a sort's): T's own range, where T has more
        than ROUTE_MAX elements.  Not from a small table (the class
        labels of a few ground-truth boxes that Mask R-CNN's matcher
        indexes by routed matches), whose range the later comparisons
        would decide for elements the rules assumed otherwise (its mask
        head took half the sampled boxes as positives, more than the
        sampler's 25%: +33% against the H200)."""
        return self._values_range(t) if t.numel() > ROUTE_MAX else None

    def _set_range(self, t, rg):
        if rg is not None and isinstance(t, self.Fake) and self._small(t):
            self._keep(self.ranges, t, rg)

    def mask(self, t):
        """The values assumed for T, a bool tensor whose values are not
        known, the first time an op counts its true elements (boolean
        indexing, nonzero, masked_select, sum, count_nonzero): the
        --dynamic-fraction f of fake._dynamic's rule, spread evenly in
        T's element order and ending on its last element (element n-1-j
        of n is true where ceil((j + 1) f) > ceil(j f): ceil(f n) of n,
        f of each row, the last of each row true where f times the row's
        length is whole: the end of a sequence is one of its segments'
        boundaries).  Kept as T's shadow, so that every later count of
        the same mask agrees (x-transformers' entropy tokenizer:
        x[mask].split(mask.sum(-1).tolist()), then the segments' lengths,
        the differences of the selected positions, add up to the
        sequence's length).  None (the rules as before) where T has
        values, is too large for a shadow, or is an expanded view (a
        stride 0 repeats elements)."""
        torch = self.torch
        if self.cpu or not isinstance(t, self.Fake) or \
                t.dtype != torch.bool or t.numel() == 0 or \
                not self._small(t) or self._has(t) or \
                any(st == 0 and sz > 1
                    for st, sz in zip(t.stride(), t.shape)):
            return None
        f = self.probability(t)
        if f is not None:
            assume(self.rec, "mask:random", round(f, 6))
        else:
            f = float(self.rec.opt.dynamic_fraction)
        part = self._kept(self.parts, t) if self.parts else None
        b = self.nonzero_bound(t) if part is None else None
        with self.unset():
            if part is not None:
                # the known elements as they are, the rule over the
                # others (in element order, ending on the last of them)
                known = part[1].reshape(-1)
                r = part[0].reshape(-1).clone()
                r[~known] = spread(torch, int((~known).sum()), f)
                r = r.reshape(tuple(t.shape))
            elif b is not None and b < f * t.numel():
                # the fraction b / n of n, b true: in integers, ceil(x b
                # / n) exactly
                n = t.numel()
                c = (torch.arange(n + 1, dtype=torch.int64) * b +
                     n - 1) // n
                r = (c[1:] > c[:-1]).flip(0).reshape(tuple(t.shape))
            else:
                r = spread(torch, t.numel(), f).reshape(tuple(t.shape))
        r = self._layout(t, r)
        self._set(t, r)
        # its complement (~T made before T was counted: nflows' spline
        # indexes with outside = ~inside, then asks torch.any(inside))
        # holds the other elements, so that both counts add up to T's
        # size and the complement's any() and all() agree with them
        p = self._negation(t)
        if p is not None and not self._has(p) and self._small(p):
            with self.unset():
                q = ~r
            self._set(p, self._layout(p, q))
        if self._registered(t) is None:
            return None
        return r

    def _link_negation(self, a, b):
        """Notes A and B = ~A (bool, values unknown) as each other's
        complement while neither storage is written (_negation)."""
        for x, y in ((a, b), (b, a)):
            ky = self._skey(y)
            if ky is not None:
                self._keep(self.negs, x, (weakref.ref(y), ky,
                                          self.gen.get(ky, 0)))

    def _negation(self, t):
        """The bool tensor that is ~T (or whose ~ T is), as made, neither
        written since, or None."""
        ent = self._kept(self.negs, t) if self.negs else None
        if ent is None:
            return None
        y = ent[0]()
        if y is None or self._skey(y) != ent[1] or \
                self.gen.get(ent[1], 0) != ent[2]:
            return None
        return y

    def _cast_count(self, t):
        """A count (MASK_COUNTS) of T, a cast of a bool mask of unknown
        values to a number type: the mask's values as its first count
        gives them (Values.mask), and T's the same, cast."""
        ent = self._kept(self.casts, t)
        if ent is None or self._has(t):
            return
        m = ent[0]()
        if m is None or self._skey(m) != ent[1] or \
                self.gen.get(ent[1], 0) != ent[2] or \
                not self._count(m, "mask"):
            return
        r = self.real(m)
        if r is not None:
            with self.unset():
                r = r.to(t.dtype)
            self._set(t, self._layout(t, r))

    def _count(self, t, kind):
        """Values.mask(T), counted as one assumption KIND (the number of
        true elements); whether T now has values."""
        r = self.mask(t)
        if r is None:
            return False
        with self.unset():
            n = int(r.count_nonzero())
        assume(self.rec, kind, n)
        return True

    # -- answers -----------------------------------------------------------
    def item(self, t):
        """T.item() from its shadow or its range, or UNKNOWN."""
        r = self.real(t) if (self.shadow or self.cpu or
                             getattr(t, "constant", None) is not None) \
            else None
        if r is not None and r.numel() == 1:
            with self.unset():
                return r.reshape(()).item()
        rg = self.range(t) if self.ranges else None
        if rg is not None and t.numel() == 1 and rg.finite():
            v = rg.value()
            if not t.dtype.is_floating_point:
                v = int(v)
            else:
                with self.unset():
                    v = self.torch.tensor(v, dtype=t.dtype).item()
                if rg.hi_open and v >= rg.hi:
                    v = float(rg.lo)
            kind = "item:range"
            assume(self.rec, kind, v)
            watch = getattr(self.rec, "watch", None)
            if watch:
                # (a loop drawing until a random value crosses a bound)
                watch.assumed(kind, v, "")
            return v
        if rg is not None and t.numel() == 1 and not t.dtype.is_complex \
                and t.dtype != self.torch.bool:
            # one end only (clamp(min=80) of an unknown value: [80, inf),
            # of floats or of integers, _rules): the default
            # answer (fake._item_value: 1.0, --item-int) where it lies in
            # the range, else the nearest value that does
            d = 1.0 if t.dtype.is_floating_point else \
                int(self.rec.opt.item_int)
            v = rg.clip(d)
            if v != d:
                if t.dtype.is_floating_point:
                    with self.unset():
                        v = self.torch.tensor(v, dtype=t.dtype).item()
                assume(self.rec, "item:range", v)
                return v
        return _known.UNKNOWN

    def _upload(self, func, name, args, kwargs, out, targets):
        """A host tensor copied into a fake one too large for a shadow
        (load_state_dict's copy_ of a checkpoint's tensor): the host
        tensor is kept (UPLOAD_BYTES of them in all), by reference with
        its version counter, and goes on with the copy to the GPU
        (_to_copy: model.cuda()) and the views of either (detach: the
        Parameter model.cuda() makes, state_dict), so that host() gives
        the values back while neither the host tensor nor the fake
        storage has been written since (MoCo v3's and SimSiam's linear
        classification check every frozen weight's .cpu() against the
        checkpoint's).  No op computes on it: views of it cost nothing,
        and only the host reads it."""
        torch = self.torch
        x = args[0] if args else None
        if name == "copy_":
            src = args[1] if len(args) > 1 else None
            if not isinstance(src, torch.Tensor) or \
                    isinstance(src, self.Fake) or \
                    src.device.type != "cpu" or src.is_sparse or \
                    not isinstance(x, self.Fake) or \
                    tuple(src.shape) != tuple(x.shape):
                return
            if self._upload_bytes(src) > UPLOAD_BYTES:
                return
            # (the host tensor itself: a detach() of it here would count
            # its own versions)
            self._keep(self.uploads, x, (src, src, src._version))
            return
        if name == "where":
            self._upload_where(func, args, kwargs, out)
            return
        if name == "_to_copy" and self._host_dense(x):
            # a host tensor too large for a shadow moved whole to the GPU
            # (`adj.cuda()`: pyGAT's dense 2708 x 2708 adjacency, whose
            # `adj.nonzero()` the sparse GAT takes its edges from): kept
            # as a copy_ from the host is (dynamic's nonzero counts it)
            if isinstance(out, self.Fake) and \
                    tuple(out.shape) == tuple(x.shape) and \
                    self._upload_bytes(x) <= UPLOAD_BYTES:
                self._keep(self.uploads, out, (x, x, x._version))
            return
        view = name in UPLOAD_VIEWS and getattr(func, "is_view", False)
        if not (view or name == "_to_copy") or \
                not isinstance(x, self.Fake) or \
                not isinstance(out, self.Fake) or \
                not view and tuple(out.shape) != tuple(x.shape):
            return
        ent = self._upload_of(x)
        if ent is None and name == "_to_copy" and x in self.shadow:
            # a cast of a tensor with a shadow to one too large for its
            # own (yolov5's segment/val.py: the uint8 masks of a batch,
            # 16 x 80 x 80 under INDEX_LIMIT, then .float(), over
            # SHADOW_LIMIT; its plot reads them back to tell overlapping
            # masks by their max): a copy of the shadow (which later
            # writes to X may change in place), kept as a host tensor is
            # for a copy from the host, with no version to check (nothing
            # else holds it; made under inference_mode, as yolov5's
            # validation runs, it has none: Tensor._version raises)
            r = self.real(x)
            if r is None:
                return
            with self.unset():
                r = r.clone()
            if self._upload_bytes(r) > UPLOAD_BYTES:
                return
            ent = (r, r, None)
        if ent is None:
            return
        src, base, version = ent
        if view:
            with self.unset():
                try:
                    src = func(src, *args[1:], **kwargs)
                except Exception:
                    return
            if tuple(src.shape) != tuple(out.shape):
                return
        if self._small(out):
            # (a small view of it: a shadow, which ops compute on)
            with self.unset():
                self._set(out, self._layout(out,
                                            src.to(out.dtype).clone()))
            return
        self._keep(self.uploads, out, (src, base, version))

    def _host_dense(self, x):
        """Whether X is a dense tensor on the host that needs no grad
        (the source of a copy to the GPU that _upload keeps: data, not
        the parameters of a model built on the host and moved, whose
        host copies would stay alive with them)."""
        torch = self.torch
        return isinstance(x, torch.Tensor) and \
            not isinstance(x, self.Fake) and x.device.type == "cpu" and \
            x.layout == torch.strided and not x.requires_grad

    def _upload_where(self, func, args, kwargs, out):
        """torch.where(cond, a, b) of a condition with a shadow (a bool
        mask under INDEX_LIMIT) and operands of known values (numbers,
        0-dim or small tensors), making a floating tensor too large for a
        shadow: transformers' eager_mask (masking_utils), `torch.where(
        mask, torch.zeros((), dtype=dtype), torch.finfo(dtype).min)`, the
        additive attention mask of a padded batch, B x 1 x S x S.  Its
        values are kept as a host tensor is for a copy from the host
        (UPLOAD_BYTES of them), so that its views (`padding_mask[:, :,
        -1, :]`) have shadows: NLLB-MoE's router (NllbMoeTop2Router.
        route_tokens) multiplies its top-1 and top-2 masks by `~padding_
        mask.bool()` of that view, and the experts' `torch.where` counts
        follow from it (eager attention, 16 x 80 x 80 elements over
        SHADOW_LIMIT: every count there had been an assumption)."""
        if not isinstance(out, self.Fake) or len(args) < 3 or kwargs:
            return
        if not all(type(d) is int for d in out.shape):
            return      # (--symbolic sizes: the rules as before)
        vals = []
        for a in args[:3]:
            if isinstance(a, self.Fake):
                r = self.real(a)
                if r is None:
                    return
                vals.append(r)
            elif isinstance(a, (bool, int, float)):
                vals.append(a)
            else:
                return
        try:
            with self.unset():
                r = func(*vals).to(out.dtype)
        except Exception:
            return
        if tuple(r.shape) != tuple(out.shape) or \
                r.numel() > INDEX_LIMIT or \
                self._upload_bytes(r) > UPLOAD_BYTES:
            return
        self._keep(self.uploads, out, (r, r, None))

    def _upload_bytes(self, src):
        """The bytes of the host storages the kept copies hold alive,
        SRC's with them (a written copy's entry dropped here)."""
        seen, n = set(), 0
        bases = [ent[1] for ent in map(self._upload_of,
                                       list(self.uploads.keys()))
                 if ent is not None]
        for base in bases + [src]:
            st = base.untyped_storage()
            if id(st) not in seen:
                seen.add(id(st))
                n += st.nbytes()
        return n

    def _upload_of(self, t):
        """(T's values on the host, the host tensor they view, its
        version counter then) of T's _upload entry while valid, else
        None."""
        ent = self._kept(self.uploads, t)
        if ent is not None and ent[2] is not None and \
                ent[1]._version != ent[2]:
            del self.uploads[t]
            return None
        return ent

    def host(self, t):
        """A real CPU tensor with T's values (shadow, a copy from the
        host, known scalar, range or the default rules), each rule
        counted."""
        torch = self.torch
        r = self.real(t)
        if r is not None:
            with self.unset():
                return r.clone()
        up = self._upload_of(t) if self.uploads else None
        if up is not None:
            with self.unset():
                return up[0].to(t.dtype).clone()
        v = self.kn.value(t)
        if v is not _known.UNKNOWN:          # known, however large
            with self.unset():
                return torch.full(tuple(t.shape), v, dtype=t.dtype)
        part = self._part_of(t) if self.parts or self.blank else None
        rg = self.range(t)
        if rg is not None and not rg.finite():
            rg = None
        if rg is not None:
            v, kind = rg.value(), "host:range"
        elif t.dtype == torch.bool:
            v, kind = bool(getattr(self.rec.opt, "item_bool", False)), \
                "host:bool"
        elif (t.dtype.is_floating_point or t.dtype.is_complex) and \
                t.numel() > 1:
            v, kind = "0.5 to 1.5", "host:spread"
        elif t.dtype.is_floating_point or t.dtype.is_complex:
            v, kind = 1.0, "host:float"
        else:
            v, kind = self.rec.opt.item_int, "host:int"
        assume(self.rec, kind, v)
        watch = getattr(self.rec, "watch", None)
        if watch is not None and rg is None:
            # a loop on values the fake run does not have stops
            watch.assumed(kind, v, "")
        with self.unset():
            if kind == "host:spread":
                # floats of unknown values, several: distinct and
                # increasing in memory order, from 0.5 to 1.5 about
                # their mean 1.0 (the one-element rule's), so that what
                # the host selects by rank selects as many as in a real
                # run (Torch-Pruning's importance scores: one value
                # everywhere tied, and nothing was pruned), and pairs
                # read as bounds (a min and a max, a box's corners) are
                # in order
                n = t.numel()
                r = (0.5 + (torch.arange(n, dtype=torch.float64) + 0.5) /
                     n).reshape(tuple(t.shape)).to(t.dtype)
            else:
                r = torch.full(tuple(t.shape), v, dtype=t.dtype)
            known = None
            if part is not None and tuple(part[0].shape) == tuple(t.shape):
                # the known elements keep their values (_part, blank
                # mirrors), the others the rule's
                r = torch.where(part[1], part[0].to(t.dtype), r)
                known = part[1]
            g = self._kept(self.guesses, t) if self.guesses else None
            if g is not None and tuple(g[0].shape) == tuple(t.shape):
                # the unknown elements a cat took from a piece with a
                # range: its value (_guess)
                m = g[1] if known is None else g[1] & ~known
                if bool(m.any()):
                    r = torch.where(m, g[0].to(t.dtype), r)
                    assume(self.rec, "part:range", int(m.sum()))
        rk = self.recipes.get(self._skey(t))
        if rk is not None and self.gen.get(rk[0], 0) == rk[1][1] and \
                rk[2] == self._where(t):
            # the same reduction again gets the same answer (_recipe)
            with self.unset():
                self.answers.setdefault(rk[0], {})[rk[1]] = r.clone()
        return r

    # -- after each op -------------------------------------------------------
    def after(self, func, name, args, kwargs, out):
        """Shadows and ranges of FUNC's outputs (_after); the bounds on
        the nonzero elements of what it made or wrote (nonzero_bound)."""
        nz = None
        self.nz_writing = getattr(getattr(func, "_schema", None),
                                  "is_mutable", True)
        if self.nz_writing and self.shadow_nz:
            # what an op that writes takes is counted anew (_shadow_nz)
            for a in itertools.chain(args, kwargs.values()):
                for x in (a if isinstance(a, (list, tuple)) else (a,)):
                    if isinstance(x, self.Fake):
                        self.shadow_nz.pop(self._skey(x), None)
        if name in NZ_OPS and not self.cpu:
            nz = self._nz_rule(name, args, kwargs, out)
        self._after(func, name, args, kwargs, out)
        if name == "sort" and not self.cpu:
            self._perm_note(args, kwargs, out)
        if self.nzs or nz is not None:
            self._nz_written(func, name, args, out, nz)
        if name in RECIPES and not self.cpu:
            self._recipe(name, args, kwargs, out)
        if name in TWINS and not self.cpu:
            self._twin(name, args, kwargs, out)

    def _twin(self, name, args, kwargs, out):
        """Notes the recipe of OUT, made by the elementwise op NAME: the
        op, each tensor argument's storage (its serial number and write
        count), offset, sizes, strides and dtype, the other arguments.
        Two outputs of one recipe hold the same values (twins(), for
        torch.equal).  An argument that is itself such an output, not
        written since, is named by its recipe's number (the recipes'
        numbers, self.recipe_nums; never reused), so that recipes of
        twins are one: GPyTorch's lengthscale is a softplus of the raw
        parameter made anew at each access."""
        ko = self._dying_key(out) if isinstance(out, self.Fake) else None
        if ko is None:
            return
        parts = [name]
        for a in list(args) + [kwargs[n] for n in sorted(kwargs)]:
            if isinstance(a, self.torch.Tensor):
                k = self._dying_key(a) if isinstance(a, self.Fake) else None
                if k is None:
                    return      # (a CPU storage's death goes unreported)
                g = self.gen.get(k, 0)
                t = self.twin_of.get(k)
                if t is not None and t[1] == g:
                    ident = ("r", t[0])
                else:
                    if k not in self.serials:
                        self.serials[k] = next(_SERIAL)
                    ident = ("s", self.serials[k], g)
                parts.append((ident, a.storage_offset(), tuple(a.shape),
                              tuple(a.stride()), a.dtype))
            elif a is None or isinstance(a, (bool, int, float, str,
                                              self.torch.dtype,
                                              self.torch.device)):
                parts.append((type(a).__name__, a))
            else:
                return
        parts.append(tuple(sorted(kwargs)))
        key = tuple(parts)
        try:
            num = self.recipe_nums.get(key)
        except TypeError:   # (symbolic sizes)
            return
        if num is None:
            if len(self.recipe_nums) >= TWIN_KEYS:
                # (bounded: an older recipe made again is not found,
                # a number is never given to another recipe)
                self.recipe_nums.clear()
            num = self.recipe_nums[key] = next(_SERIAL)
        self.twin_of[ko] = (num, self.gen.get(ko, 0))

    def twins(self, a, b):
        """Whether fake tensors A and B are the same elements of two
        outputs of one recipe (_twin), neither written since: GPyTorch's
        kernels divide x1 and x2 by the lengthscale, then ask
        torch.equal(x1_, x2_) of the two quotients when x2 is x1."""
        ka, kb = self._skey(a), self._skey(b)
        ta, tb = self.twin_of.get(ka), self.twin_of.get(kb)
        return ta is not None and tb is not None and ta[0] == tb[0] and \
            self.gen.get(ka, 0) == ta[1] and self.gen.get(kb, 0) == tb[1] \
            and a.dtype == b.dtype and \
            a.storage_offset() == b.storage_offset() and \
            tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()

    def _where(self, t):
        """T's elements: their storage's write count, offset, sizes and
        strides."""
        return (self.gen.get(self._skey(t), 0), t.storage_offset(),
                tuple(t.shape), tuple(t.stride()))

    def _recipe(self, name, args, kwargs, out):
        """A reduction NAME of a CUDA tensor whose values are unknown,
        output small: the values the host was answered for the same
        reduction of the same elements (storage, offset, sizes, strides,
        dtype, the other arguments; the storage not written since),
        where it read one (Values.host), become its shadow; else the
        recipe is noted for host().  GPyTorch's GridInterpolationKernel
        sets its grid's bounds from x.min(0)[0].tolist() and
        x.max(0)[0].tolist() (host:float, 1.0), then its Interpolation
        raises where x.min(0)[0] of the same x is below the grid's
        minimum: unknown, the mask rule counted one of two dimensions
        out of bounds, where the same answers agree (the grid built from
        them holds them)."""
        t0 = args[0] if args else None
        o = out[0] if isinstance(out, (tuple, list)) and out else out
        if not isinstance(t0, self.Fake) or not isinstance(o, self.Fake) \
                or not self._small(o) or self._has(o) or \
                any(isinstance(a, self.torch.Tensor) for a in args[1:]) or \
                any(isinstance(a, self.torch.Tensor)
                    for a in kwargs.values()):
            return
        k = self._dying_key(t0)
        if k is None:
            return
        try:
            # (the write count second: host() compares it)
            key = (name, *self._where(t0), t0.dtype,
                   repr(args[1:]), repr(sorted(kwargs.items())))
            hash(key)
        except Exception:   # (symbolic sizes: a SymInt is unhashable)
            return
        r = self.answers.get(k, {}).get(key)
        if r is not None and tuple(r.shape) == tuple(o.shape):
            with self.unset():
                r = r.clone()
            self._set(o, self._layout(o, r))
        else:
            ko = self._dying_key(o)
            if ko is not None:
                self.recipes[ko] = (k, key, self._where(o))

    # -- bounds on the number of nonzero elements ----------------------------
    def nonzero_bound(self, t):
        """At most how many of T's elements are nonzero, or None where
        nothing bounds it below T's size: a known value (0: none), a
        shadow (its count), or the bound its storage got from the ops
        that made or wrote it (NZ_*), times the repeats of a stride-0
        view.  A mask built by scattering ones at top-k indices into
        zeros has at most k true elements a row (Ultralytics'
        TaskAlignedAssigner: 10 anchors an object, of 8,400), whatever
        the values; a count of its true elements (Values.mask,
        fake._dynamic) takes at most that many."""
        if not isinstance(t, self.Fake):
            return None
        v = self.kn.value(t)
        if v is not _known.UNKNOWN:
            try:
                return 0 if v == 0 else t.numel()
            except Exception:
                return None
        r = self._registered(t)
        if r is not None:
            return self._shadow_nz(t, r, 1)
        b = self._nz_kept(self._skey(t))
        if b is None:
            return None
        rep = 1
        for st, sz in zip(t.stride(), t.shape):
            if st == 0:
                rep *= int(sz)
        return min(b * rep, t.numel())

    def row_bound(self, t):
        """At most how many elements of each row of T (a slice along its
        last dimension) are nonzero, or None where nothing bounds it
        below the row's length: a known value, a shadow, or the bound
        the ops that made T's storage kept (a scatter along the last
        dimension writes at most index.shape[-1] elements a row;
        Ultralytics' top-10 anchors of each object's row)."""
        if not isinstance(t, self.Fake) or t.dim() == 0:
            return None
        n = t.shape[-1]
        v = self.kn.value(t)
        if v is not _known.UNKNOWN:
            return 0 if v == 0 else n
        r = self._registered(t)
        if r is not None:
            return self._shadow_nz(t, r, 2)
        ent = self._nz_entry(self._skey(t))
        if ent is None or ent[2] is None or ent[3] != n or \
                ent[4] != _last_stride(t) or not self._whole(t):
            return None     # (rows of another layout: a transpose's)
        return ent[2]

    def _shadow_nz(self, t, r, which):
        """The count of nonzero elements (WHICH 1) of T's shadow R, or the
        most of one row of its last dimension (2), counted once until an
        op that writes takes T's storage (after()): gpt-fast's int8
        weights, each cast to the activations' dtype at every call of its
        layer, were counted anew at each cast (nonzero_bound, row_bound
        of _nz_rule).  Within an op that writes, counted and not kept:
        it has written its targets' shadows already."""
        if self.nz_writing:
            ent = [r, None, None]
        else:
            k = self._skey(t)
            per = self.shadow_nz.get(k)
            if per is None:
                from torch.utils.weak import WeakIdKeyDictionary
                per = self.shadow_nz[k] = WeakIdKeyDictionary()
            ent = per.get(t)
            if ent is None or ent[0] is not r:
                ent = per[t] = [r, None, None]
        if ent[which] is None:
            with self.unset():
                ent[which] = int(r.count_nonzero()) if which == 1 else \
                    int((r != 0).sum(-1).max()) if r.numel() else 0
        return ent[which]

    def count(self, t, frac, shape=None):
        """How many of T's elements (of T broadcast to SHAPE) a rule that
        takes the fraction FRAC of them counts as nonzero (fake._dynamic's
        nonzero, masked_select; boolean indexing): ceil(FRAC * n), at
        most nonzero_bound(T) (times the broadcast)."""
        size = t.numel() if shape is None else math.prod(shape)
        p = self.probability(t)
        # (less 1e-12 of it: a probability that is the mean of a map
        # (Values._pred) carries float rounding, 2304.0000000000005 of
        # the 2,304 true elements of hlb-CIFAR10's cutmix masks)
        n = int(math.ceil((frac if p is None else p) * size * (1 - 1e-12)))
        b = self.nonzero_bound(t)
        if b is None:
            return n
        return min(n, b * (size // max(t.numel(), 1)))

    def _nz_rule(self, name, args, kwargs, out):
        """The bounds on the nonzero elements of NAME's output (its
        target, in place), from its inputs' (nonzero_bound, row_bound):
        (in all, in each row of the last dimension or None), or None."""
        torch = self.torch
        t0 = args[0] if args else None
        o = out[0] if isinstance(out, (tuple, list)) and out else out
        if not isinstance(t0, self.Fake) or not isinstance(o, self.Fake):
            return None
        perm = self._perm_eq(args, o) if name == "eq" else None
        if name in NZ_SCATTER:
            # scatter(self, dim, index, src|value): one element an
            # index's; index_add(self, dim, index, source): source's
            src = args[3] if len(args) > 3 else \
                kwargs.get("source", kwargs.get("src"))
            w = src if name.startswith("index_add") else \
                (args[2] if len(args) > 2 else kwargs.get("index"))
            b = self._nz_storage(t0)
            if b is None or not isinstance(w, torch.Tensor):
                return None
            b += w.numel()
            # along the last dimension: the index's (the source's)
            # elements of a row go into the same row of the target
            d = args[1] if len(args) > 1 else kwargs.get("dim")
            row = self.row_bound(t0) if isinstance(d, int) and \
                w.dim() == t0.dim() and d % max(t0.dim(), 1) == \
                t0.dim() - 1 else None
            if row is not None:
                row += w.shape[-1]
        elif name in NZ_SHRINK:
            return None         # _nz_written keeps the storage's bound
        elif perm is not None:
            b, row = perm
        elif name in NZ_COMPARE:
            c = args[1] if len(args) > 1 else None
            if isinstance(c, torch.Tensor):
                c = self.kn.value(c)
            if not isinstance(c, (int, float)) or \
                    not NZ_COMPARE[name](c):
                return None
            b = self.nonzero_bound(t0)
            row = self.row_bound(t0)
        elif name in ("max", "min") and len(args) > 1 and \
                isinstance(args[1], torch.Tensor):
            return None         # (max.other: the elementwise maximum)
        elif name in NZ_BOTH:
            b = row = None
            ts = [a for a in args[:2] if isinstance(a, torch.Tensor)]
            for a in ts:
                ba = self.nonzero_bound(a)
                if ba is not None and a.numel() > 0:
                    ba *= o.numel() // a.numel()
                    b = ba if b is None else min(b, ba)
                ra = self.row_bound(a) if o.dim() and a.dim() and \
                    a.shape[-1] == o.shape[-1] else None
                if ra is None:
                    continue
                row = ra if row is None else min(row, ra)
                # times a factor broadcast along the rows (size 1 in the
                # last dimension): its nonzero elements are the rows
                # where the product may be nonzero (Ultralytics' mask_gt,
                # zero for an image's padded objects)
                for c in ts:
                    if c is a or not c.dim() or c.shape[-1] != 1 or \
                            not c.numel():
                        continue
                    bc = self.nonzero_bound(c)
                    if bc is not None:
                        rows = o.numel() // max(o.shape[-1], 1)
                        bc = ra * bc * (rows // c.numel())
                        b = bc if b is None else min(b, bc)
        else:
            b = self.nonzero_bound(t0)
            row = self.row_bound(t0) if \
                tuple(o.shape) == tuple(t0.shape) else None
        # (a bound of every element says nothing: not kept, so that
        # `x * ones` does not make every later op look at nzs)
        n = o.shape[-1] if o.dim() else 1
        if row is not None and row >= n:
            row = None
        if (b is None or b >= o.numel()) and row is None:
            return None
        return (o.numel() if b is None else b), row

    def _perm_note(self, args, kwargs, out):
        """Notes the indices of sort(self, dim=-1, descending=False) (and
        sort.stable(self, *, stable, dim, descending); argsort is sort's
        indices) along the last dimension: each row of them a
        permutation of 0..n-1 (PyTorch's sort writes every position of
        a slice once)."""
        if not isinstance(out, (tuple, list)) or len(out) < 2 or \
                not args or not isinstance(args[0], self.Fake):
            return
        x, idx = args[0], out[1]
        d = args[1] if len(args) > 1 and isinstance(args[1], int) else \
            kwargs.get("dim", -1)
        if not isinstance(d, int) or not isinstance(idx, self.Fake) or \
                x.dim() == 0 or d % x.dim() != x.dim() - 1 or \
                not idx.is_contiguous() or not self._whole(idx):
            return
        k = self._dying_key(idx)
        if k is not None:
            self.perms[k] = (self.gen.get(k, 0), int(idx.shape[-1]))

    def _perm_rows(self, t):
        """The row length n where every row of T (along its last
        dimension) is a whole row of sort's indices (perms), or None."""
        if not isinstance(t, self.Fake) or t.dim() == 0:
            return None
        k = self._dying_key(t)
        ent = self.perms.get(k) if k is not None else None
        if ent is None or self.gen.get(k, 0) != ent[0]:
            return None
        n = ent[1]
        if t.shape[-1] != n or (n > 1 and t.stride(-1) != 1) or \
                t.storage_offset() % n:
            return None
        for st, sz in zip(t.stride()[:-1], t.shape[:-1]):
            if sz > 1 and st % n:
                return None
        return n

    def _perm_eq(self, args, o):
        """eq(a, b) where one side's rows are permutations (_perm_rows)
        and the other one value a row (a number, a 0-dim tensor, or size
        1 in the last dimension: KnowledgeGraphEmbedding's
        `(argsort[i, :] == positive_arg[i]).nonzero()`, the rank of the
        true entity): at most one element of each row of the output is
        true.  (the bound in all, in each row) or None."""
        torch = self.torch
        if len(args) < 2 or not isinstance(o, self.Fake) or o.dim() == 0:
            return None
        for p, c in ((args[0], args[1]), (args[1], args[0])):
            n = self._perm_rows(p)
            if n is None or o.shape[-1] != n:
                continue
            if isinstance(c, bool) or not (
                    isinstance(c, (int, float)) or
                    (isinstance(c, torch.Tensor) and
                     (c.dim() == 0 or c.shape[-1] == 1))):
                continue
            return o.numel() // max(n, 1), 1
        return None

    def _nz_entry(self, k):
        """nzs's entry for storage K, while no other write has touched it
        since, or None."""
        ent = self.nzs.get(k)
        if ent is None or self.gen.get(k, 0) != ent[1]:
            return None
        return ent

    def _nz_kept(self, k):
        """The bound nzs keeps for storage K (_nz_entry), or None."""
        ent = self._nz_entry(k)
        return None if ent is None else ent[0]

    def _nz_keep(self, t, nz):
        """Keeps NZ, _nz_rule's (bound, row), for T's storage."""
        k = self._dying_key(t)
        if k is not None:
            # (a row bound holds for the rows of T's layout: read
            # through a view of the same last size and stride only)
            self.nzs[k] = (nz[0], self.gen.get(k, 0), nz[1],
                           t.shape[-1] if t.dim() else 1, _last_stride(t))

    def _nz_storage(self, t):
        """nonzero_bound of T's whole storage (before an op writes into
        it), or None."""
        if not self._whole(t):
            return self._nz_kept(self._skey(t))
        return self.nonzero_bound(t)

    def _nz_written(self, func, name, args, out, nz):
        """Keeps NZ, the bounds _nz_rule gave, for the storage FUNC wrote
        or made; a write with no rule forgets the written storage's."""
        written = _known.written_args(self.written, func)
        if written:
            # only zeros written: the bound holds, past the write count
            # _after advanced
            zeros = name in NZ_SHRINK or (name == "masked_fill_" and
                                          len(args) > 2 and
                                          self.kn.value(args[2]) == 0)
            for i, _ in written:
                t = args[i] if i < len(args) else None
                k = self._skey(t) if isinstance(t, self.Fake) else None
                if k is None:
                    continue
                if zeros:
                    if k in self.nzs:
                        self.nzs[k] = (self.nzs[k][0], self.gen.get(k, 0),
                                       *self.nzs[k][2:])
                elif nz is not None and t is args[0]:
                    self._nz_keep(t, nz)
                else:
                    self.nzs.pop(k, None)
            return
        o = out[0] if isinstance(out, (tuple, list)) and out else out
        if nz is not None and isinstance(o, self.Fake) and self._whole(o):
            self._nz_keep(o, nz)

    def _after(self, func, name, args, kwargs, out):
        """Shadows and ranges of FUNC's outputs; writes not mirrored on a
        shadow make the written storages' shadows stale."""
        pend = self.pending
        self.pending = None
        if name in MASK_COUNTS and args and isinstance(args[0], self.Fake):
            if args[0].dtype == self.torch.bool:
                self._count(args[0], "mask")
            elif self.casts:
                self._cast_count(args[0])
        if name == "_to_copy" and not self.cpu and args and \
                isinstance(args[0], self.Fake) and \
                isinstance(out, self.Fake) and \
                args[0].dtype == self.torch.bool != out.dtype and \
                tuple(args[0].shape) == tuple(out.shape) and \
                not self._has(args[0]):
            k = self._skey(args[0])
            if k is not None:
                self._keep(self.casts, out, (weakref.ref(args[0]), k,
                                             self.gen.get(k, 0)))
        if name in NEGATIONS and not self.cpu and args and \
                isinstance(args[0], self.Fake) and \
                isinstance(out, self.Fake) and \
                args[0].dtype == out.dtype == self.torch.bool and \
                tuple(args[0].shape) == tuple(out.shape) and \
                not self._has(args[0]):
            self._link_negation(args[0], out)
        if not self.cpu and not self.shadow and not self.ranges and \
                not self.offs and \
                not self.srange and not self.unif and not self.probs and \
                not self.norms and not self.uploads and not self.parts and \
                not self.nzidx and name not in SOURCES and name not in EMPTY and \
                name not in RANDOM and name not in NORMAL and \
                name not in BOUNDED and name not in CLAMPS and \
                name not in INDICES and name not in GATHERS and \
                name not in NONNEG and name not in SEARCHES and \
                name != "_to_copy":
            return
        if name == "add" and isinstance(out, self.Fake) and args and \
                isinstance(args[0], self.Fake) and out is not args[0] and \
                not kwargs and self._skey(out) == self._skey(args[0]):
            # fake.py's in-place add (the autograd engine's accumulation,
            # the math path's attn + mask): add_, then a view of it.
            aten = self.torch.ops.aten
            self.after(aten.add_.Tensor, "add_", args, kwargs, args[0])
            r = self._registered(args[0])
            if r is not None:
                with self.unset():      # (a view of the shadow, not fake)
                    r = r.view(tuple(out.shape))
                self._set(out, r)
            return
        if name in EMPTY and not self.cpu:
            if isinstance(out, self.Fake):
                self._blank(out)
            return
        if name == "set_":
            # a tensor given another storage (or part of its own): no
            # element of either is written, the shadows of its views
            # stay (torch.empty(0).set_(st), the flat buffer an RNN's
            # weights view: rnn.py)
            return
        written = _known.written_args(self.written, func)
        targets = []
        for i, an in written:
            t = args[i] if i < len(args) else kwargs.get(an)
            for t in (t if isinstance(t, (list, tuple)) else (t,)):
                if isinstance(t, self.Fake):
                    targets.append(t)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if not targets and not any(
                isinstance(o, self.Fake) or (isinstance(o, (tuple, list))
                                             and o and
                                             isinstance(o[0], self.Fake))
                for o in outs):
            return      # an op on real (CPU) tensors: its values are real
        big = False
        if self.limit is not None:
            for o in outs:
                if isinstance(o, self.torch.Tensor) and not self._small(o):
                    big = True
        real = None
        self.fresh = {}
        if pend is not None and pend[0] is out:
            real = pend[1]
        elif not big and (self.cpu or name not in RANDOM):
            real = self._compute(func, name, args, kwargs, out, targets)
        # (nothing here may keep a fake tensor alive past this call: its
        # storage's death is a row of the trace)
        fresh, self.fresh = self.fresh, {}
        if real is not None:
            reals = real if isinstance(real, (tuple, list)) else (real,)
            if targets:
                if fresh:
                    ts = [t for t, _ in fresh.values()]
                    blank = [self._blank_valid(t) for t in ts]
                    part = len(ts) == 1 and not self.cpu and \
                        not self._whole(ts[0])
                    if part:
                        # known values into part of a storage of unknown
                        # ones (`f[0] = 0`: a copy_ into f's select): the
                        # storage's range and the pinned elements, as
                        # below
                        kept = self._partial_write(name, args, kwargs,
                                                   ts[0])
                        before = self.gen.get(self._skey(ts[0]), 0)
                    self._stale(ts)
                    if part:
                        self._wrote_part(name, args, kwargs, ts[0], kept,
                                         before)
                    for (t, r), b in zip(fresh.values(), blank):
                        self._set(t, r)
                        if b:
                            self._blank_write(t, r)
                return
            view = getattr(func, "is_view", False)
            for o, r in zip(outs, reals):
                if isinstance(o, (list, tuple)):
                    for o2, r2 in zip(o, r):
                        self._set(o2, r2 if view else self._layout(o2, r2))
                else:
                    self._set(o, r if view else self._layout(o, r))
            return
        pre = None
        pre_range = None
        offs = None if self.cpu else \
            self._offsets_op(func, name, args, kwargs, targets)
        if targets:
            if name == "scatter_" and not self.cpu and len(targets) == 1:
                # (the target's values before the write: a sparse gate
                # scattered in place, _rules)
                pre = self.real(targets[0])
            if not self.cpu and len(targets) == 1 and args and \
                    targets[0] is args[0] and (self.ranges or self.srange):
                # (the range of an in-place op's input, which its write
                # makes stale: `item_next += logit_start_idx` of a
                # multinomial's sample, bark's coarse generation, moves
                # the range as `item_next + start` does; _rules)
                pre_range = self.range(targets[0])
            kept = None if self.cpu or len(targets) != 1 else \
                self._partial_write(name, args, kwargs, targets[0])
            before = self.gen.get(self._skey(targets[0]), 0)
            held = not self.cpu and name in UNKNOWN_WRITES and \
                len(targets) == 1 and self._blank_hold(targets[0])
            self._stale(targets)
            if held:
                self._blank_unknown(targets[0])
            if not self.cpu and len(targets) == 1:
                self._wrote_part(name, args, kwargs, targets[0], kept,
                                 before)
        if self.cpu:
            return
        if offs is not None:
            o = targets[0] if targets else outs[0]
            if isinstance(o, self.Fake) and \
                    tuple(o.shape) == tuple(offs.shape):
                self._keep(self.offs, o, offs)
        if real is None and (self.uploads or big and (
                name == "copy_" or name == "_to_copy" and args and
                (args[0] in self.shadow or self._host_dense(args[0])) or
                name == "where" and not targets
                and args and isinstance(args[0], self.Fake) and
                self._has(args[0]))):
            self._upload(func, name, args, kwargs, out, targets)
        if not targets and name in PART_OPS and \
                (self.parts or self.blank or self.guesses or
                 name in PART_MAKE):
            self._part(func, name, args, kwargs, out)
        # rules mode: routing shadows, ranges
        self._rules(func, name, args, kwargs, out, outs, targets, pre,
                    pre_range)

    def _part_of(self, t):
        """(values, known) of T: a real tensor of T's shape and a bool one
        saying which of its elements are known (all, where T has a
        shadow), or None where none is."""
        torch = self.torch
        if not isinstance(t, self.Fake):
            return None
        r = self.real(t)
        if r is not None:
            with self.unset():
                return r, torch.ones(tuple(t.shape), dtype=torch.bool)
        p = self._kept(self.parts, t) if self.parts else None
        if p is None and self.blank:
            p = self._blank_part(t)
        return p

    def _part(self, func, name, args, kwargs, out):
        """Partly known values (rules mode): where an op of PART_OPS
        makes OUT (at most SHADOW_LIMIT elements) from tensors some of
        whose elements are known and others not, OUT keeps its known
        elements too (whisper's decoding: its known prompt, then each
        step's token of unknown value cat'ed to it, then F.pad with the
        end-of-text token; the first end-of-text, `(t ==
        eot).nonzero()[0, 0]`, lies past the prompt).  A tensor all of
        whose elements come out known gets them as its shadow; a mask
        counted (Values.mask) keeps its known elements and assumes the
        others."""
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if not outs or not all(
                isinstance(o, self.Fake) and type(o.numel()) is int and
                o.numel() <= SHADOW_LIMIT for o in outs):
            return
        if name in ("cat", "concat") and (self.ranges or self.guesses) or \
                self.guesses and args and args[0] in self.guesses:
            try:
                with self.unset():
                    self._guess(func, name, args, kwargs, outs)
            except Exception:
                pass
        if name in ("cat", "concat") and not any(
                self._has(t) or t in self.parts or
                self.blank and self._blank_part(t) is not None
                for t in args[0] if isinstance(t, self.Fake)):
            return      # (a cat of no known element: the common case)
        try:
            with self.unset():
                got = self._part_op(func, name, args, kwargs, outs)
        except Exception:
            return
        if got is None:
            return
        for o, (v, k) in zip(outs, got):
            if tuple(v.shape) != tuple(o.shape) or \
                    tuple(k.shape) != tuple(o.shape):
                continue
            with self.unset():
                v = v.to(o.dtype)
                every, some = bool(k.all()), bool(k.any())
            if every:
                self._set(o, self._layout(o, v))
            elif some:
                self._keep(self.parts, o, (v, k))

    def _guess(self, func, name, args, kwargs, outs):
        """The host's answers for unknown elements of OUTS (_part): a cat
        of known values and pieces of integers in a finite range (a
        token sampled by multinomial, shifted, cat'ed to a known prompt
        a step at a time: bark's generation loops) answers each such
        piece's elements with its range's value, as their .item() would,
        rather than one rule for the whole tensor (which put bark's codes
        outside their codebooks); views and copies keep them."""
        torch = self.torch

        def guess(t):
            e = self._kept(self.guesses, t) if self.guesses else None
            if e is not None:
                return e
            shape = tuple(t.shape)
            rg = self.range(t)
            if rg is not None and rg.integral and rg.finite():
                return (torch.full(shape, rg.value(), dtype=t.dtype),
                        torch.ones(shape, dtype=torch.bool))
            return (torch.zeros(shape, dtype=t.dtype),
                    torch.zeros(shape, dtype=torch.bool))
        if name in ("cat", "concat"):
            ts = args[0]
            if not all(isinstance(t, self.Fake) for t in ts):
                return
            dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
            ps = [guess(t) for t in ts]
            if not any(bool(p[1].any()) for p in ps):
                return
            got = [(torch.cat([p[0] for p in ps], dim),
                    torch.cat([p[1] for p in ps], dim))]
        elif name in PART_SAME:
            p = self._kept(self.guesses, args[0])
            if p is None:
                return
            if name == "_to_copy":
                got = [(p[0].to(outs[0].dtype), p[1].clone())]
            else:
                vs = func(p[0], *args[1:], **kwargs)
                ks = func(p[1], *args[1:], **kwargs)
                got = [(vs, ks)] if isinstance(vs, torch.Tensor) else \
                    list(zip(vs, ks))
        else:
            return
        for o, (v, k) in zip(outs, got):
            if isinstance(o, self.Fake) and \
                    tuple(v.shape) == tuple(o.shape) and bool(k.any()):
                self._keep(self.guesses, o, (v.to(o.dtype), k))

    def _part_op(self, func, name, args, kwargs, outs):
        """The (values, known) pairs of OUTS, the outputs of NAME
        (_part), or None."""
        torch = self.torch

        def part(t, whole=False):
            p = self._part_of(t)
            if p is None and whole and isinstance(t, self.Fake):
                shape = tuple(t.shape)
                p = (torch.zeros(shape, dtype=t.dtype),
                     torch.zeros(shape, dtype=torch.bool))
            return p
        if name in ("cat", "concat"):
            ts = args[0]
            dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
            ps = [part(t, True) for t in ts]
            if any(p is None for p in ps) or \
                    not any(bool(p[1].any()) for p in ps):
                return None
            return [(torch.cat([p[0] for p in ps], dim),
                     torch.cat([p[1] for p in ps], dim))]
        if name == "constant_pad_nd":
            v = args[2] if len(args) > 2 else kwargs.get("value", 0)
            v = self.kn.value(v) if isinstance(v, torch.Tensor) else v
            p = part(args[0])
            if p is None or not isinstance(v, (int, float, bool)):
                return None
            pad = list(args[1])
            return [(torch.constant_pad_nd(p[0], pad, v),
                     torch.constant_pad_nd(p[1], pad, True))]
        p = part(args[0]) if args else None
        if p is None:
            return None
        if name in ("index_select", "index_copy") and len(args) > 2 and \
                isinstance(args[1], int):
            # (a known index: lit-llama's generate reads its prompt with
            # index_select and writes each token with index_copy)
            idx = self.real(args[2])
            if idx is None:
                return None
            if name == "index_select":
                return [(p[0].index_select(args[1], idx),
                         p[1].index_select(args[1], idx))]
            src = part(args[3], True) if len(args) > 3 else None
            if src is None or src[0].dtype != p[0].dtype:
                return None
            return [(p[0].index_copy(args[1], idx, src[0]),
                     p[1].index_copy(args[1], idx, src[1]))]
        if name == "_to_copy":
            return [(p[0].to(outs[0].dtype), p[1].clone())]
        if name in PART_SAME:
            vs = func(p[0], *args[1:], **kwargs)
            ks = func(p[1], *args[1:], **kwargs)
            if isinstance(vs, torch.Tensor):
                return [(vs, ks)]
            return list(zip(vs, ks))
        if name in ("logical_not", "bitwise_not") and \
                p[0].dtype == torch.bool:
            return [(~p[0], p[1])]
        if name in ("any", "all"):
            if len(args) > 1 or kwargs:
                return None
            b = p[0].bool()
            hit = (p[1] & b).any() if name == "any" else (p[1] & ~b).any()
            if not bool(hit):
                return None
            return [(torch.tensor(name == "any"), torch.tensor(True))]
        c = args[1] if len(args) > 1 else None
        c = self.kn.value(c) if isinstance(c, torch.Tensor) else c
        if isinstance(c, (int, float, bool)) and not kwargs:
            return [(getattr(torch, name)(p[0], c), p[1].clone())]
        return None

    def _blank(self, t):
        """Keeps T, a small uninitialized tensor (empty, empty_like; of at
        most SHADOW_LIMIT elements, whatever its type), as blank: its
        values are had once the program has written every element of its
        storage with known values, part by part (Ultralytics'
        xywh2xyxy: y = empty_like(x), then y[..., :2] and y[..., 2:]
        written; the boxes then decide how many objects an image has, a
        mask's nonzero bound)."""
        k = self._dying_key(t)
        n = t.numel()
        # (a size under --symbolic is none: its test would be a guard)
        if k is None or type(n) is not int or not 0 < n <= SHADOW_LIMIT:
            return
        try:
            size = t.untyped_storage().nbytes() // t.element_size()
        except Exception:
            return
        if size > SHADOW_LIMIT:
            return
        self.blank[k] = (weakref.ref(t), size, None, self.gen.get(k, 0))

    def _blank_valid(self, t):
        """Whether T's storage is blank with every write since mirrored."""
        k = self._skey(t)
        ent = self.blank.get(k)
        if ent is None:
            return False
        if ent[3] != self.gen.get(k, 0):
            del self.blank[k]       # a write of unknown values
            return False
        return True

    def _blank_write(self, t, r):
        """Mirrors R, the values just written into T (a view of a blank
        storage), on the storage's (its values and which are written,
        made at the first write); once every element has been written,
        the empty tensor gets them as its shadow."""
        k = self._skey(t)
        base, size, kept, _ = self.blank[k]
        with self.unset():
            kept = kept or self._unwritten(size, t.dtype)
            vals, done = kept
            geo = _geometry(t)
            vals.as_strided(*geo).copy_(r)
            done.as_strided(*geo).fill_(True)
            every = bool(done.all())
        self.blank[k] = (base, size, kept, self.gen.get(k, 0))
        b = base()
        if not every or b is None:
            return
        del self.blank[k]
        with self.unset():
            v = vals.as_strided(*_geometry(b)).clone()
        self._set(b, self._layout(b, v))

    def _unwritten(self, size, dtype):
        """A blank mirror of SIZE elements of DTYPE with none written:
        (values, written), flat over the storage (_blank_write)."""
        torch = self.torch
        return (torch.zeros((size,), dtype=dtype),
                torch.zeros((size,), dtype=torch.bool))

    def _blank_part(self, t):
        """(values, known) of T from its storage's blank mirror
        (_blank_write, _blank_unknown), where some of T's elements are
        known; else None."""
        k = self._skey(t)
        ent = self.blank.get(k)
        if ent is None or ent[2] is None or \
                ent[3] != self.gen.get(k, 0) or ent[2][0].dtype != t.dtype:
            return None
        vals, done = ent[2]
        geo = _geometry(t)
        try:
            with self.unset():
                known = done.as_strided(*geo).clone()
                if not bool(known.any()):
                    return None
                return vals.as_strided(*geo).clone(), known
        except Exception:
            return None

    def _blank_hold(self, t):
        """Before a write of unknown values into T (a copy_ or fill_ of
        it, or an index_copy_/index_put_ into it: UNKNOWN_WRITES),
        whether a blank mirror is to keep T's storage's other elements
        (_blank_unknown after the write): where T's storage is blank, or
        where it has known values (a shadow of T's, in the storage's own
        layout: a token buffer made by torch.full or zeros), kept from
        now on as a blank mirror; else not (the write forgets the
        storage's values, as before).  (Meta's llama
        and lit-llama generate into such a buffer: its prompt stays known
        while each step writes a token of unknown value, and the decoded
        text holds the prompt: lit-llama's LoRA generate splits it at the
        prompt's "### Response:".)"""
        k = self._skey(t)
        if k is None:
            return False
        if self._blank_valid(t):
            return True
        r = self.real(t)
        if r is None or self._dying_key(t) is None or \
                r.dtype != t.dtype or r.stride() != t.stride() or \
                r.storage_offset() != t.storage_offset():
            return False
        torch = self.torch
        try:
            size = t.untyped_storage().nbytes() // t.element_size()
            rs = r.untyped_storage()
            if not 0 < size <= SHADOW_LIMIT or \
                    rs.nbytes() != size * r.element_size():
                return False
            base = t._base if t._base is not None else t
            with self.unset():
                vals = torch.empty(0, dtype=t.dtype).set_(
                    rs, 0, (size,), (1,)).clone()
                done = torch.ones((size,), dtype=torch.bool)
        except Exception:
            return False
        self.blank[k] = (weakref.ref(base), size, (vals, done),
                         self.gen.get(k, 0))
        return True

    def _blank_unknown(self, t):
        """T's elements, just written with unknown values, are unknown in
        its storage's blank mirror (_blank_hold); the mirror is kept at
        the storage's new write count."""
        k = self._skey(t)
        ent = self.blank.get(k)
        if ent is None:
            return
        base, size, kept, _ = ent
        try:
            with self.unset():
                kept = kept or self._unwritten(size, t.dtype)
                kept[1].as_strided(*_geometry(t)).fill_(False)
        except Exception:
            self.blank.pop(k, None)
            return
        self.blank[k] = (base, size, kept, self.gen.get(k, 0))

    def _partial_write(self, name, args, kwargs, t):
        """The range of T's whole storage after NAME writes values of
        unknown value but known range into T, part of it or all
        (rollout buffers: actions[step] = dist.sample(), a copy_ of
        multinomial's indices into a row of a zeros tensor): the union
        of the storage's range before (its range, the values of its
        shadow, or T's own where T is the whole storage) and the written
        values' range.  None where either is not known."""
        src = PARTIAL_SRC.get(name)
        if src is None:
            return None
        i, key = src
        v = args[i] if i < len(args) else kwargs.get(key)
        new = self._range_of(v, whole=False)
        if new is None:
            return None
        if (name in ("copy_", "fill_") or self._covers(name, args, t)) \
                and self._whole(t):
            # every element written: the written values' range alone
            return new
        # the elements not written keep their values: a masked_fill_,
        # index_put_ or scatter_ into a tensor of unknown values (DALLE's
        # logits.masked_fill_(logits_mask, -finfo.max)) leaves a storage
        # of unknown range, not the filled value's (which made every
        # logit -finfo.max: topk's values a point, and the top-k filter's
        # scatter_ of them into -inf lost every value)
        old = self._range_of(t, whole=True)
        if old is None:
            return None
        old = self._left_by_mask(name, args, t, old)
        if old is None:
            return new
        return Range(min(old.lo, new.lo), max(old.hi, new.hi),
                     (old.hi_open if old.hi > new.hi else new.hi_open
                      if new.hi > old.hi else old.hi_open and new.hi_open),
                     old.integral and new.integral)

    def _left_by_mask(self, name, args, t, old):
        """The range of the elements of T (its whole storage, range OLD)
        that a masked write NAME leaves, where its mask compares T's
        elements, unwritten since, with a constant (`b[b >= n] = n - 1`,
        `b.masked_fill_(b < 0, 0)`): those the comparison is false of,
        OLD met with it; None where no element is left; else OLD.
        HistogramObserver's _upscale_histogram clamps its bucket indices
        so before a bincount of minlength bins."""
        m = args[1] if len(args) > 1 else None
        if name in ("index_put_", "_index_put_impl_"):
            m = m[0] if isinstance(m, (list, tuple)) and len(m) == 1 \
                else None
        elif name != "masked_fill_":
            return old
        cm = self._kept(self.cmps, m) if self.cmps and \
            isinstance(m, self.Fake) and m.dtype == self.torch.bool else None
        if cm is None or not self._whole(t) or \
                cm[0] != (self._skey(t), self._where(t)):
            return old
        op, c = cm[1], cm[2]
        lo, hi, hi_open = old.lo, old.hi, old.hi_open
        if op in ("ge", "gt"):
            # left: x < c (ge), x <= c (gt)
            top = (math.ceil(c) - 1 if op == "ge" else math.floor(c)) \
                if old.integral else c
            if top < hi or top == hi and op == "ge" and not old.integral:
                hi, hi_open = top, op == "ge" and not old.integral
        elif op in ("le", "lt"):
            # left: x > c (le), x >= c (lt)
            bot = (math.floor(c) + 1 if op == "le" else math.ceil(c)) \
                if old.integral else c
            lo = max(lo, bot)
        else:
            return old
        if lo > hi or lo == hi and hi_open:
            return None
        return Range(lo, hi, hi_open, old.integral)

    def _wrote_part(self, name, args, kwargs, t, kept, before):
        """After a write into T (its storage's write count BEFORE it):
        KEPT, the storage's range (_partial_write), and the pinned
        elements (_pin), kept at the new write count."""
        k = self._dying_key(t)
        if kept is not None and k is not None:
            self.srange[k] = (kept, self.gen.get(k, 0))
        self._pin(name, args, kwargs, t, before)

    def _pin(self, name, args, kwargs, t, before):
        """Keeps which elements of T's storage a copy_ or fill_ of one
        known value into part of it just set (TimesNet's FFT_for_Period:
        `frequency_list[0] = 0`, the zero frequency's amplitude left out
        before a topk), added to those that writes of the same value set
        while the storage had no other write (BEFORE: its write count
        before this one).  Storages of at most SHADOW_LIMIT elements."""
        if name not in ("copy_", "fill_") or self._whole(t):
            return
        i, key = PARTIAL_SRC[name]
        v = args[i] if i < len(args) else kwargs.get(key)
        rg = self._range_of(v, whole=False)
        val = rg.single() if rg is not None else None
        k = self._dying_key(t)
        if val is None or k is None:
            return
        try:
            size = t.untyped_storage().nbytes() // t.element_size()
        except Exception:
            return
        if not 0 < size <= SHADOW_LIMIT:
            return
        ent = self.pins.get(k)
        with self.unset():
            if ent is not None and ent[2] == before and ent[0] == val:
                mask = ent[1]
            else:
                mask = self.torch.zeros((size,), dtype=self.torch.bool)
            mask.as_strided(*_geometry(t)).fill_(True)
        self.pins[k] = (val, mask, self.gen.get(k, 0))

    def _unpinned(self, t, dim, largest):
        """The positions along DIM of T that a topk (LARGEST, or the
        smallest) may choose before the others, as a 1-D index tensor,
        or None: those not pinned (_pin) in every row at the end of T's
        range that ranks last (its bottom for the largest, its closed top
        for the smallest).  The other elements are of unknown value in
        that range: they rank before the pinned ones but where they
        equal that end (a real run's amplitudes of noise are not 0)."""
        k = self._dying_key(t)
        ent = self.pins.get(k) if k is not None else None
        if ent is None or self.gen.get(k, 0) != ent[2]:
            return None
        rg = self.range(t)
        if rg is None or rg.lo == rg.hi:
            return None
        val = ent[0]
        if not ((largest and val == rg.lo) or
                (not largest and val == rg.hi and not rg.hi_open)):
            return None
        n = t.shape[dim]
        with self.unset():
            m = ent[1].as_strided(*_geometry(t))
            m = m.movedim(dim, -1).reshape(-1, n).all(0)
            free = (~m).nonzero().flatten()
        return free if free.numel() < n else None

    def _covers(self, name, args, t):
        """Whether a scatter_ into the 1-D T writes every element: its
        index known, a permutation of T's positions (PyTorch Geometric's
        pooled batch vector: arange(n).scatter_(0, cluster_index,
        batch[perm]), every cluster written; invert_permutation's
        empty_like(perm).scatter_(0, perm, arange(n)))."""
        if name != "scatter_" or t.dim() != 1 or len(args) < 3:
            return False
        idx = self.real(args[2])
        if idx is None or idx.dim() != 1 or idx.numel() != t.numel():
            return False
        with self.unset():
            return self.torch.unique(idx).numel() == t.numel()

    def _whole(self, t):
        """Whether T covers its storage."""
        try:
            return t.numel() * t.element_size() == \
                t.untyped_storage().nbytes()
        except Exception:
            return False

    def _range_of(self, v, whole):
        """The range of V's values (a number, a tensor with a range, a
        shadow or a known value); WHOLE: of all of V's storage."""
        if isinstance(v, bool) or not isinstance(v, (int, float,
                                                     self.torch.Tensor)):
            return None
        if not isinstance(v, self.torch.Tensor):
            return Range(v, v, False, float(v).is_integer())
        if v.dtype.is_complex or v.dtype == self.torch.bool:
            return None
        integral = not v.dtype.is_floating_point
        kept = self._storage_range(self._skey(v))
        if kept is not None:
            return kept
        if whole and not self._whole(v):
            base = getattr(v, "_base", None)
            if isinstance(base, self.Fake) and self._whole(base) and \
                    self._skey(base) == self._skey(v):
                # a view of a tensor that covers the storage (`f[0] = 0`
                # writes into f's select): the base's range, the
                # storage's before this write
                rb = self.range(base)
                if rb is not None:
                    return rb
            r = self._registered(v)
            if r is None:
                return None
            with self.unset():
                base = self.torch.empty(0, dtype=r.dtype).set_(
                    r.untyped_storage())
                if base.numel() == 0:
                    return None
                lo, hi = base.min().item(), base.max().item()
            return Range(lo, hi, False, integral)
        rg = self.range(v)
        if rg is not None:
            return rg
        return self._values_range(v)

    def _layout(self, o, r):
        """R laid out as the fake output O (the CPU kernel may choose other
        strides than the GPU's, on which a later view depends)."""
        torch = self.torch
        if not isinstance(r, torch.Tensor) or not isinstance(o, self.Fake) \
                or r.layout != torch.strided or tuple(r.shape) != \
                tuple(o.shape) or r.stride() == o.stride():
            return r
        try:
            with self.unset():
                t = torch.empty_strided(tuple(o.shape), o.stride(),
                                        dtype=r.dtype)
                t.copy_(r)
            return t
        except Exception:
            return r

    # -- sentinel classes of scores (rules mode) --------------------------
    # A score of unknown value lies inside (-SENTINEL, SENTINEL) (known.py,
    # compare:sentinel); a known penalty of that size added to it
    # (transformers' beam search: `topk_log_probs += (~finished) * -1e9`,
    # the -1e9 of a beam with no score yet) puts it below every score
    # without one.  self.offs keeps, for a small floating tensor of
    # unknown values, each element's class: the known sentinel part of
    # its value (-1e9, 0 for a plain score), so that a topk ranks the
    # scores above the penalized ones (_unsentinel), as on a GPU.
    def _classes(self, t):
        """The sentinel classes of T's elements (a real tensor of T's
        shape, 0 where T holds a plain score), or None (not floating, too
        large, or a shadow of non-finite values)."""
        torch = self.torch
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
            return None
        if isinstance(t, self.Fake):
            if t in self.offs:
                c = self._kept(self.offs, t)
                if c is not None:
                    return c
            if not self._small(t):
                return None
            r = self.real(t)
            if r is None:
                with self.unset():
                    return torch.zeros(tuple(t.shape), dtype=torch.float64)
        else:
            r = t
        with self.unset():
            r = r.to(torch.float64)
            if r.isnan().any():
                return None
            return torch.where(r.abs() >= _known.SENTINEL, r,
                               torch.zeros((), dtype=torch.float64))

    def _offsets_op(self, func, name, args, kwargs, targets):
        """The sentinel classes of NAME's output (of its one target, for
        an in-place op), computed by FUNC on the inputs' classes (the
        exact values of its index and mask inputs), or None: nothing of a
        sentinel in or out."""
        base = name[:-1] if name.endswith("_") and \
            not name.startswith("_") else name
        base = _known.ALIASES.get(base, base)
        if base not in OFFSET_MAKE and base not in OFFSET_MOVE and \
                name not in OFFSET_MAKE:
            return None
        if len(targets) > 1 or any(isinstance(v, self.torch.Tensor)
                                   for v in kwargs.values()):
            return None
        torch = self.torch
        flat = []
        for a in args:
            flat.extend(a if isinstance(a, (list, tuple)) else (a,))
        fakes = [a for a in flat if isinstance(a, self.Fake) and
                 a.dtype.is_floating_point]
        if not fakes:
            return None
        held = [a for a in fakes if a in self.offs and
                self._kept(self.offs, a) is not None]
        nums = [a for a in flat if isinstance(a, (int, float)) and
                not isinstance(a, bool) and math.isfinite(a) and
                abs(a) >= _known.SENTINEL]
        if not held:
            # made here: a score tensor of unknown values plus a known
            # sentinel (an exact tensor holding one, or the number: an
            # add's, a where's, a cat's)
            if base not in OFFSET_MAKE or \
                    all(self._has(a) for a in fakes) or \
                    not (nums or any(self._has(a) for a in fakes)):
                return None
        elif base in ("mul", "div") and (
                flat[0] is not held[0] or
                any(isinstance(a, torch.Tensor) for a in flat[1:])):
            return None     # (a product of two tensors: no class)
        any_sentinel = bool(held) or bool(nums) and base in OFFSET_MAKE

        def swap(a):
            nonlocal any_sentinel
            if not isinstance(a, torch.Tensor):
                return a
            if a.dtype.is_floating_point:
                c = self._classes(a)
                if c is None:
                    raise LookupError
                if not any_sentinel:
                    with self.unset():
                        any_sentinel = bool((c != 0).any())
                return c
            r = self.real(a)
            if r is None:
                raise LookupError
            return r
        try:
            new = [type(a)(swap(x) for x in a) if isinstance(a, (list, tuple))
                   else swap(a) for a in args]
            if not any_sentinel:
                return None
            with self.unset():
                out = func(*new, **kwargs)
                if isinstance(out, (list, tuple)):
                    return None
                out = torch.where(out.abs() >= _known.SENTINEL, out,
                                  torch.zeros((), dtype=out.dtype))
                if not bool((out != 0).any()):
                    return None
                return out.contiguous()
        except Exception:
            # (LookupError: an input's values or classes unknown)
            return None

    def _unsentinel(self, t, dim, largest, k):
        """The positions along DIM of T that a topk of K (LARGEST, or the
        smallest) chooses from, as a 1-D index tensor, or None: those of
        the top sentinel class (Values._classes) in every row, where the
        others rank below them, at least K of them."""
        c = self._classes(t)
        if c is None or c.dim() == 0:
            return None
        n = t.shape[dim]
        with self.unset():
            if not bool((c != 0).any()):
                return None
            rows = c.movedim(dim, -1).reshape(-1, n)
            best = rows.amax(1, keepdim=True) if largest else \
                rows.amin(1, keepdim=True)
            sel = rows == best
            if not bool((sel == sel[:1]).all()):
                return None     # (rows of different classes)
            free = sel[0].nonzero().flatten()
        if not k <= free.numel() < n:
            return None
        return free

    def _stale(self, targets):
        for t in targets:
            k = self._skey(t)
            if k is not None:
                self.gen[k] = self.gen.get(k, 0) + 1
            self.ranges.pop(t, None)
            self.shadow.pop(t, None)

    def _registered(self, t):
        """T's own recorded shadow (not one made up from a known scalar)."""
        ent = self.shadow.get(t)
        if ent is None:
            return None
        k = self._skey(t)
        if k != ent[1] or self.gen.get(k, 0) != ent[2]:
            del self.shadow[t]
            return None
        return ent[0]

    def _compute(self, func, name, args, kwargs, out, targets):
        """FUNC run on the CPU on the inputs' shadows: its outputs, or None
        where an input has none.  For an op that writes (in place, out=):
        a target with a shadow of its own is written through it (the
        write is mirrored: every view of that shadow sees it); one without
        (or one made up from a known scalar) is given the values written
        (self.fresh: target -> values), when the op overwrites all of it
        (copy_, fill_, zero_, out=) or its old value is known."""
        torch = self.torch
        tid = {id(t) for t in targets}
        # First whether every input has values, before any is made (a
        # known scalar's torch.full, a target's zeros): most ops of a
        # program have an input without (a weight, an activation).
        # (a scatter_ along a permutation writes every element too:
        # invert_permutation's, pack_padded_sequence's unsorted_indices)
        full = name in FULL or (len(targets) == 1 and
                                self._covers(name, args, targets[0]) and
                                self._whole(targets[0]))
        for a in args:
            for x in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(x, self.Fake) and not (
                        full and id(x) in tid) and not self._has(x):
                    return None
        for k, v in kwargs.items():
            if k == "out" and isinstance(v, self.Fake):
                continue
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(x, self.Fake) and not (
                        full and id(x) in tid) and not self._has(x):
                    return None
        missing = []
        fresh = self.fresh = {}

        def conv(a):
            if isinstance(a, torch.Tensor):
                if id(a) in tid and isinstance(a, self.Fake):
                    r = self._registered(a)
                    if r is None:
                        if full:    # (its own values: made here)
                            with self.unset():
                                r = torch.zeros(tuple(a.shape),
                                                dtype=a.dtype)
                        else:
                            r = self.real(a)
                            if r is None:
                                missing.append(a)
                                return None
                            # the old values the op writes part of
                            # (index_put_, Tensor.__setitem__'s: the
                            # elements not indexed keep theirs), copied
                            # on the CPU, outside the fake mode: a clone
                            # under it is a fake tensor, and so would be
                            # the target's shadow (an op that dispatch
                            # runs in place under the mode too:
                            # masked_select_backward's masked_scatter_
                            # into its zeros, dispatch._zeros_inplace)
                            with self.unset():
                                r = r.clone()
                        fresh[id(a)] = (a, r)
                    return r
                r = self.real(a)
                if r is None:
                    missing.append(a)
                return r
            if isinstance(a, torch.device) and a.type != "cpu":
                return torch.device("cpu")
            return a

        a2 = [type(a)(conv(x) for x in a) if isinstance(a, (list, tuple))
              else conv(a) for a in args]
        k2 = {}
        for k, v in kwargs.items():
            if k == "out" and isinstance(v, self.Fake) and \
                    self._registered(v) is None:
                with self.unset():
                    r = torch.empty(tuple(v.shape), dtype=v.dtype)
                fresh[id(v)] = (v, r)
                k2[k] = r
            elif isinstance(v, (list, tuple)):
                k2[k] = type(v)(conv(x) for x in v)
            else:
                k2[k] = conv(v)
        if missing:
            return None
        if k2.get("pin_memory"):
            k2["pin_memory"] = False
        if k2.get("device") is not None:
            k2["device"] = torch.device("cpu")
        try:
            with self.unset():
                real = self._run(func, name, a2, k2, out)
                if real is None and targets:
                    real = ()       # an in-place foreach op: done
        except _Skip:
            return None
        except Exception as e:
            real = None
            if not targets and LOW_PRECISION.search(str(e)):
                try:
                    with self.unset():
                        real = self._run_upcast(func, name, a2, k2, out)
                except _Skip:
                    return None
                except Exception:
                    real = None
            if real is None:
                if self.cpu and name not in self.no_kernel:
                    self.no_kernel.add(name)
                    assume(self.rec, "values:unknown", name,
                           site="%s (%s)" % (
                               where(), str(e).split("\n")[0][:60]))
                return None
        return real

    def _run_upcast(self, func, name, a2, k2, out):
        """FUNC where the CPU has no kernel for its half or bfloat16
        inputs (AT_DISPATCH without them: avg_pool3d and its backward,
        which CUDA's kernels dispatch for both, nnU-Net's ResEnc UNet
        under bf16 autocast): the same op on the inputs made float32, its
        outputs made the GPU's dtypes again.  CUDA's kernels of these
        types compute in float (at::opmath_type, acc_type) and round the
        result once, as this does.  Functional ops only (no target: an op
        that writes its input would write the float copy)."""
        torch = self.torch
        low = (torch.float16, torch.bfloat16)

        def up(a):
            if isinstance(a, torch.Tensor) and a.dtype in low:
                return a.float()
            if isinstance(a, (list, tuple)):
                return type(a)(up(x) for x in a)
            return a

        r = self._run(func, name, [up(a) for a in a2],
                      {k: up(v) for k, v in k2.items()}, out)

        def down(x, o):
            if isinstance(x, torch.Tensor) and isinstance(o, torch.Tensor) \
                    and x.dtype != o.dtype:
                return x.to(o.dtype)
            return x

        if isinstance(r, (list, tuple)):
            outs = out if isinstance(out, (list, tuple)) else (out,)
            return type(r)(down(x, o) for x, o in zip(r, outs))
        o = out[0] if isinstance(out, (list, tuple)) and out else out
        return down(r, o)

    def _run(self, func, name, a2, k2, out):
        """FUNC on the CPU (random and empty tensors only under --values
        cpu: _Skip)."""
        torch = self.torch
        fb = FALLBACK.get(name)
        if fb is not None:
            return fb(torch, func, a2, k2, out)
        if name == "empty" or name == "empty_strided" or \
                name == "empty_like" or name == "new_empty" or \
                name == "new_empty_strided":
            if not self.cpu:
                raise _Skip()
            r = func(*a2, **k2)
            with torch.no_grad():
                r.zero_()
            return r
        if torch.Tag.nondeterministic_seeded in func.tags:
            if not self.cpu:
                raise _Skip()
            o = out[0] if isinstance(out, (tuple, list)) and out else out
            if isinstance(o, torch.Tensor) and o.device.type == "cpu":
                # a draw on the host (a weight made on the CPU, fake by
                # param_new, and its init's uniform_): from the program's
                # own generator, as in the real run, which then draws the
                # rest (a sampler's order, a DataLoader's seed, its
                # random crops) as the real one does (the rules mode's
                # host.HostRNG)
                return func(*a2, **k2)
            st = torch.get_rng_state()
            torch.set_rng_state(self.rng.get_state())
            try:
                return func(*a2, **k2)
            finally:
                self.rng.set_state(torch.get_rng_state())
                torch.set_rng_state(st)
        return func(*a2, **k2)

    # -- sizes that depend on values -------------------------------------
    def dynamic(self, func, name, args, kwargs):
        """A fake output for an op whose output size depends on its
        inputs' values, from their shadows (exact), or None: then fake.py's
        rules (--dynamic-fraction).  Boolean indexing counts the mask's
        elements the same way; an operator of another library whose fake
        kernel asks for a data-dependent size (ctx.new_dynamic_size) is
        computed from the shadows or refused in one line."""
        torch = self.torch
        kind = self.aten_ops.get(func)
        if kind is None:        # (once an op: most ops are not dynamic)
            if getattr(func, "namespace", "aten") != "aten":
                kind = "other"
            elif torch.Tag.dynamic_output_shape in func.tags:
                kind = "dynamic"
            else:
                kind = "static"
            self.aten_ops[func] = kind
        if kind == "static":
            return None
        aten_op = kind == "dynamic"
        if aten_op and name == "index":
            return self._bool_index(func, args, kwargs)
        if not aten_op:
            from torch._subclasses.fake_tensor import \
                DynamicOutputShapeException
            self.in_func = True     # (the program's own errors pass)
            try:
                return func(*args, **kwargs)
            except DynamicOutputShapeException:
                pass
            finally:
                self.in_func = False
        dev = None
        for a in list(args) + list(kwargs.values()):
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, self.Fake):
                    dev = t.device
                    break
            if dev is not None:
                break
        if dev is None:
            return None
        real = None
        up = self._upload_of(args[0]) if aten_op and self.uploads and \
            name in ("nonzero", "argwhere") and args and \
            isinstance(args[0], self.Fake) else None
        if up is not None:
            # the values of a host tensor moved to the GPU (_upload):
            # nonzero's rows computed on the host, exact; a shadow of
            # them where small enough
            with self.unset():
                r = func(up[0].to(args[0].dtype))
            out = torch.empty(tuple(r.shape), dtype=r.dtype, device=dev)
            if r.numel() <= INDEX_LIMIT:
                self.pending = (out, r)
            return out
        if aten_op and name in ("nonzero", "argwhere") and args:
            self._count(args[0], "nonzero")
        elif aten_op and name == "masked_select" and len(args) > 1:
            self._count(args[1], "masked_select")
        if self.cpu or self.shadow:
            real = self._compute(func, name, args, kwargs, None, ())
            self.fresh = {}
        if real is None and aten_op and name == "masked_select" and \
                len(args) > 1:
            # the values unknown, the mask known: its count
            m = self.real(args[1])
            if m is not None:
                shape = torch.broadcast_shapes(args[0].shape, args[1].shape)
                with self.unset():
                    n = int(m.expand(shape).count_nonzero())
                return torch.empty((n,), dtype=args[0].dtype, device=dev)
        if real is None:
            if aten_op or func.name() in OP_RULES:
                return None      # fake._dynamic's rules
            raise Refused(
                "%s: the operator %s returns a size that depends on its "
                "inputs' values, which --fake does not have; record with "
                "--values cpu (it needs a CPU kernel of %s)" % (
                    where(), func.name(), func.name()))
        reals = real if isinstance(real, (tuple, list)) else (real,)
        fakes = [torch.empty(tuple(r.shape), dtype=r.dtype, device=dev)
                 if isinstance(r, torch.Tensor) else r for r in reals]
        out = type(real)(fakes) if isinstance(real, (tuple, list)) \
            else fakes[0]
        self.pending = (out, real)
        return out

    def _bool_index(self, func, args, kwargs):
        """x[mask]: aten.index with boolean indices, as index() runs it
        (expandTensors: mask.nonzero(), one long index a dimension)."""
        torch = self.torch
        if len(args) < 2 or not isinstance(args[1], (list, tuple)):
            return None
        idx = list(args[1])
        if not any(isinstance(i, torch.Tensor) and
                   i.dtype in (torch.bool, torch.uint8) for i in idx):
            return None
        for i in idx:
            if isinstance(i, self.Fake) and i.dtype == torch.bool:
                self._count(i, "nonzero")
        if self.cpu or self.shadow:
            real = self._compute(func, "index", args, kwargs, None, ())
            self.fresh = {}
            if real is not None:
                out = torch.empty(tuple(real.shape), dtype=real.dtype,
                                  device=args[0].device)
                self.pending = (out, real)
                return out
        new = []
        frac = self.rec.opt.dynamic_fraction
        for i in idx:
            if isinstance(i, torch.Tensor) and \
                    i.dtype in (torch.bool, torch.uint8):
                r = self.real(i)
                if r is not None:
                    with self.unset():
                        n = int(r.count_nonzero())
                else:
                    n = self.count(i, frac)
                    assume(self.rec, "nonzero", n)
                for _ in range(max(i.dim(), 1)):
                    new.append(torch.empty((n,), dtype=torch.long,
                                           device=i.device))
            else:
                new.append(i)
        return func(args[0], new)

    # -- the rules mode's routing and ranges ---------------------------------
    def _rules(self, func, name, args, kwargs, out, outs, targets,
               pre=None, pre_range=None):
        """The rules mode's values of NAME's outputs; PRE: an in-place
        scatter_'s target's values before it wrote (its shadow is stale
        by now); PRE_RANGE: an in-place op's input's range before it
        wrote (stale as well)."""
        torch = self.torch
        t0 = args[0] if args else None
        if name in RANDOM or name in NORMAL or self.unif or self.probs \
                or self.norms:
            self._draws(name, args, kwargs, outs, targets)
        if self.nzidx and name == "select":
            self.nonzero_column(args, outs)
        if name == "_amp_foreach_non_finite_check_and_unscale_" and \
                len(args) > 1 and isinstance(args[1], self.Fake):
            # GradScaler finds no inf or NaN (fake.py's assumption
            # gradscaler:no-overflow): found_inf stays 0, and
            # _amp_update_scale_ grows the scale as in a real run.
            with self.unset():
                z = torch.zeros(tuple(args[1].shape), dtype=args[1].dtype)
            self._set(args[1], z)
            return
        if name in ("scatter", "scatter_") and len(args) > 3 and \
                not kwargs and isinstance(args[3], self.Fake) and \
                (name == "scatter" or args[3].dtype.is_floating_point) \
                and isinstance(out, self.Fake) and self._small(out):
            # A sparse gate (a mixture of experts' zeros(...).scatter(1,
            # top_k_indices, top_k_gates)): the target's and the indices'
            # values known (a routing shadow), the scattered ones not.
            # They are taken nonzero, each the default floating answer
            # 1.0 (its range's midpoint where it has one), so that the
            # gates' nonzero() and (gates > 0).sum(0) follow the routing.
            # In place as well (zeros_like(logits).scatter_(1, ...):
            # sparse-moe-pytorch's TopKRouter), from the target's values
            # before the write, where the scattered values are gates
            # (floating: an integer scatter_ of values of a range,
            # PyG's pooled batch vector, keeps that range, below).
            r0 = self.real(t0) if name == "scatter" else pre
            ri = self.real(args[2])
            if r0 is not None and ri is not None and \
                    isinstance(args[1], int):
                rg = self.range(args[3])
                v = rg.value() if rg is not None and rg.finite() else 1.0
                if args[3].dtype.is_floating_point:
                    # (an integral range's value is a Python int, which
                    # torch.full takes for float32 only within int64)
                    v = float(v)
                with self.unset():
                    src = torch.full(tuple(args[3].shape), v,
                                     dtype=args[3].dtype)
                    r = torch.scatter(r0, args[1], ri, src)
                self._set(out, self._layout(out, r))
                assume(self.rec, "scatter:src", v)
            return
        if name in RANDOM:
            rg = random_range(torch, name, args, kwargs, out)
            if rg is not None:
                for o in (targets or outs[:1]):
                    self._set_range(o, rg)
            return
        if name in COMPARE and isinstance(t0, self.Fake) and \
                isinstance(out, self.Fake) and self.range(t0) is not None:
            # (a mask of a tensor of known range: a masked write of that
            # tensor by it bounds the elements it leaves, _left_by_mask)
            c = self._constant(args)
            if c is not None:
                self._keep(self.cmps, out,
                           ((self._skey(t0), self._where(t0)), name, c))
        if name in SEARCHES:
            # bucketize(input, boundaries), searchsorted(sorted_sequence,
            # input): an insertion point into the sequence's last
            # dimension, 0 to its length (HistogramObserver's
            # _upscale_histogram: `bucketize(mid_points, boundaries) - 1`,
            # then a bincount of minlength bins)
            seq = args[1] if name == "bucketize" and len(args) > 1 else \
                t0 if name == "searchsorted" else None
            if isinstance(seq, torch.Tensor) and seq.dim() > 0 and \
                    type(seq.shape[-1]) is int:
                for o in outs[:1]:
                    if isinstance(o, torch.Tensor):
                        self._set_range(o, Range(0, seq.shape[-1], False,
                                                 True))
            return
        if name in NONNEG:
            rg = self.range(t0) if isinstance(t0, torch.Tensor) and \
                not t0.dtype.is_complex else None
            if rg is None:
                new = Range(0.0, math.inf, True, False)
            elif rg.lo >= 0:
                new = rg
            elif rg.hi <= 0:
                new = Range(-rg.hi, -rg.lo, False, rg.integral)
            else:
                top = max(-rg.lo, rg.hi)
                new = Range(0, top, rg.hi_open and rg.hi > -rg.lo,
                            rg.integral)
            for o in outs[:1]:
                # (of any size: TimesNet's amplitudes of a batch of 128
                # are 417792 floats, their mean over the batch is small)
                if isinstance(o, torch.Tensor) and \
                        (o.dtype.is_floating_point or new.finite()):
                    self._keep(self.ranges, o, new)
            return
        if name in BOUNDED:
            # (a std made positive by exp of a tanh squashed into bounds:
            # torch.distributions.Normal's check of its scale, SAC's actor)
            f = BOUNDED[name]
            rg = self.range(t0) if isinstance(t0, torch.Tensor) else None
            lo, hi = (rg.lo, rg.hi) if rg is not None else \
                (-math.inf, math.inf)
            lo, hi = (f(lo), f(hi)) if f is not None else (0.0, 1.0)
            for o in (targets or outs[:1]):
                if isinstance(o, torch.Tensor) and \
                        o.dtype.is_floating_point:
                    self._set_range(o, Range(lo, hi, False, False))
            return
        if name in INDICES and isinstance(t0, torch.Tensor) and \
                not (name in ("max", "min") and (len(args) < 2 or
                                                 not isinstance(args[1],
                                                                int))):
            # (a max or min of all elements, or against another tensor,
            # has no indices: its values propagate below)
            i = INDICES[name]
            if i >= len(outs) or not isinstance(outs[i], torch.Tensor):
                return
            if i == 1 and isinstance(outs[0], torch.Tensor):
                # the values (sort's, topk's, max's along a dim) are
                # some of the input's: its range
                vr = self.range(t0) or self._gathered_range(t0)
                if vr is not None:
                    self._set_range(outs[0], vr)
            dim = kwargs.get("dim", args[2] if name in ("topk", "kthvalue")
                             and len(args) > 2 else
                             args[1] if name not in ("topk", "kthvalue") and
                             len(args) > 1 else -1)
            if name == "kthvalue" and len(args) <= 2:
                dim = -1
            if name in ("argmax", "argmin") and dim is None:
                n = t0.numel()
            else:
                if not isinstance(dim, int) or t0.dim() == 0:
                    return
                n = t0.shape[dim % t0.dim()]
            idx = outs[i]
            # topk's k indices of a row are k distinct positions (topk's
            # contract: at::topk selects k elements of the slice), over a
            # dimension of any size: a range alone answers each element's
            # .item() with one midpoint, k equal indices (openai/whisper's
            # beam search keys its candidates by token on the host and
            # found one where topk gives beam_size + 1), so a topk of k > 1
            # over more than ROUTE_MAX entries gets the uniform routing
            # too: distinct indices in every row
            many = name == "topk" and n > ROUTE_MAX and idx.dim() > 0 and \
                idx.shape[dim % idx.dim()] > 1
            if name in ROUTING and (n <= ROUTE_MAX or many) and n > 0 and \
                    self._small(idx) and idx.numel() > 0 and \
                    (name != "argmax" or dim is not None) and \
                    (name != "argmin" or dim is not None):
                d = None if name != "topk" else dim % idx.dim()
                free = None
                if name == "topk" and self.pins:
                    largest = kwargs.get("largest", args[3] if len(args) > 3
                                         else True)
                    free = self._unpinned(t0, dim % t0.dim(), largest)
                    if free is not None and free.numel() < idx.shape[d]:
                        free = None     # (fewer left than k)
                note = None
                if name == "topk" and free is None and self.offs:
                    largest = kwargs.get("largest", args[3] if len(args) > 3
                                         else True)
                    free = self._unsentinel(t0, dim % t0.dim(), largest,
                                            idx.shape[d])
                    if free is not None:
                        note = " (%d of %d below a sentinel left out)" % (
                            n - free.numel(), n)
                if free is None:
                    r = self.routing(idx, n, d)
                elif note is not None:
                    r = self.routing(idx, free.numel(), d, note)
                    if r is not None:
                        with self.unset():
                            r = free[r.long()].to(idx.dtype)
                else:
                    r = self.routing(idx, free.numel(), d,
                                     " (%d of %d pinned at %s left out)" % (
                                         n - free.numel(), n,
                                         fmt(self.pins[self._skey(t0)][0])))
                    if r is not None:
                        with self.unset():
                            r = free[r.long()].to(idx.dtype)
                if r is not None:
                    self._set(idx, r)
                    return
            self._set_range(idx, Range(0, n - 1, False, True))
            return
        # propagation of ranges
        if not self.ranges and not self.srange and name not in GATHERS \
                and name not in CLAMPS:
            return
        rg = self.range(t0) if isinstance(t0, torch.Tensor) else None
        if rg is None and pre_range is not None:
            rg = pre_range
        if rg is None and name in CLAMPS and isinstance(t0, torch.Tensor):
            lo, hi = self._clamp_bounds(args, kwargs, name)
            if lo is not None or hi is not None:
                # torch.clamp(x, lo, hi) of x of unknown values: [lo, hi]
                # (Stable-Baselines3's SAC actor, `th.clamp(log_std,
                # LOG_STD_MIN, LOG_STD_MAX)`, whose exp is a Normal's
                # scale, checked positive); one bound: [lo, inf) or
                # (-inf, hi], whose .item() is the default answer
                # clipped into it (Values.item)
                rg = Range(-math.inf, math.inf, False,
                           not t0.dtype.is_floating_point)
        base = name[:-1] if name.endswith("_") and \
            not name.startswith("_") else name
        base = _known.ALIASES.get(base, base)
        if rg is None and base in GATHERS and isinstance(t0, torch.Tensor):
            # exact values gathered at unknown indices (a graph batch's
            # node-to-graph vector reordered by a top-k's permutation,
            # PyG's TopKPooling): values among the source's
            rg = self._gathered_range(t0)
        if rg is None and base == "mul" and len(args) > 1 and \
                isinstance(args[1], torch.Tensor) and \
                isinstance(t0, torch.Tensor):
            # a mask times a range: the product below, either order
            rg = self.range(args[1])
            if rg is not None:
                args = (args[1], args[0]) + tuple(args[2:])
                t0 = args[0]
        if rg is None:
            if base in ("cat", "stack") and args and \
                    isinstance(args[0], (list, tuple)):
                rs = [self.range(t) if isinstance(t, torch.Tensor) else None
                      for t in args[0]]
                if rs and all(r is not None for r in rs):
                    rg = Range(min(r.lo for r in rs), max(r.hi for r in rs),
                               all(r.hi_open for r in rs),
                               all(r.integral for r in rs))
                    for o in outs[:1]:
                        self._set_range(o, rg)
            return
        new = None
        k = args[1] if len(args) > 1 else None
        kv = self.kn.value(k) if k is not None else _known.UNKNOWN
        if base in ("max", "min", "amax", "amin") and rg.integral and \
                len(args) < 2 and not kwargs.get("dim"):
            # the largest (smallest) of a tensor's integers is its
            # range's top (bottom): `int(batch.max()) + 1`, the number of
            # graphs or segments a scatter sizes its output by
            # (torch_geometric's global pools), is the whole range
            top = base in ("max", "amax")
            v = rg.int_top() if top else rg.lo
            if math.isinf(v):
                new = rg    # (a clamp's one end: the other is unknown)
            else:
                v = math.ceil(v)
                new = Range(v, v, False, True)
                if rg.lo != rg.hi:
                    assume(self.rec, "range:" + ("max" if top else "min"),
                           v)
        elif base in KEEP and base not in ("max", "min") or \
                (base in ("max", "min") and (len(args) < 2 or
                                             isinstance(args[1], int))):
            new = rg
        elif base in ("add", "sub") and isinstance(kv, (int, float)) and \
                not isinstance(kv, bool):
            alpha = kwargs.get("alpha", 1)
            c = kv * alpha * (1 if base == "add" else -1)
            new = Range(rg.lo + c, rg.hi + c, rg.hi_open,
                        rg.integral and float(c).is_integer())
        elif base == "mul" and (isinstance(kv, bool) or (
                kv is _known.UNKNOWN and isinstance(k, torch.Tensor))):
            # times a mask (Liger's cross_entropy: `(target *
            # target_mask).max() < V`): a product of two ranges, a bool
            # tensor of unknown values in [0, 1]
            # (a tensor of known values, ones_like's shadow: theirs;
            # Stable-Baselines3's `th.ones_like(mean) * log_std.exp()`)
            rk = Range(int(kv), int(kv), False, True) \
                if isinstance(kv, bool) else self._range_of(k, whole=False)
            if rk is None and k.dtype == torch.bool:
                rk = Range(0, 1, False, True)
            if rk is not None:
                # (integers' closed tops; reals' hi, a closed bound)
                b = rg.int_top() if rg.integral else rg.hi
                d = rk.int_top() if rk.integral else rk.hi
                ps = (rg.lo * rk.lo, rg.lo * d, b * rk.lo, b * d)
                if not any(math.isnan(p) for p in ps):
                    new = Range(min(ps), max(ps), False,
                                rg.integral and rk.integral)
        elif base in ("mul", "div") and isinstance(kv, (int, float)) and \
                not isinstance(kv, bool) and kv > 0 and \
                kwargs.get("rounding_mode") is None:
            c = kv if base == "mul" else 1.0 / kv
            new = Range(rg.lo * c, rg.hi * c, rg.hi_open,
                        rg.integral and base == "mul" and
                        float(kv).is_integer())
        elif base in ("clamp", "clip", "clamp_min", "clamp_max"):
            lo, hi = self._clamp_bounds(args, kwargs, base)
            nlo, nhi, ho = rg.lo, rg.hi, rg.hi_open
            if lo is not None:
                nlo = max(nlo, lo)
            if hi is not None and hi <= nhi:
                nhi, ho = hi, False
            new = Range(nlo, nhi, ho, rg.integral)
        elif base in ("remainder", "fmod") and isinstance(kv, int) and \
                not isinstance(kv, bool) and kv > 0 and rg.integral and \
                (base == "remainder" or rg.lo >= 0):
            new = Range(0, kv - 1, False, True)
        elif base in ("floor", "trunc", "ceil", "round") and rg.finite():
            new = Range(math.floor(rg.lo), math.ceil(rg.hi), False, True)
        elif base == "exp" and rg.hi < 709:     # (exp(709) is finite)
            new = Range(math.exp(rg.lo), math.exp(rg.hi), rg.hi_open, False)
        if new is None:
            return
        for o in outs[:1]:
            if not isinstance(o, torch.Tensor):
                continue
            if not o.dtype.is_floating_point and \
                    math.isinf(new.lo) and math.isinf(new.hi):
                continue    # (integers of no bound: nothing known)
            if not o.dtype.is_floating_point and o.dtype != torch.bool \
                    and not new.integral:
                # a cast to an integer type truncates toward zero
                new = Range(new.lo if math.isinf(new.lo) else
                            math.floor(new.lo), new.int_top(), False,
                            True)
            self._set_range(o, new)

    def _clamp_bounds(self, args, kwargs, name="clamp"):
        """A clamp's known (min, max), None for a bound not given or of
        unknown value (aten::clamp's min and max, positional or by
        name; clamp_min's min and clamp_max's max, its second
        argument)."""
        bounds = []
        name = name.rstrip("_")
        slots = ((1, "min"), (None, "max")) if name == "clamp_min" else \
            ((None, "min"), (1, "max")) if name == "clamp_max" else \
            ((1, "min"), (2, "max"))
        for i, key in slots:
            if i is None:
                bounds.append(None)
                continue
            v = args[i] if len(args) > i else kwargs.get(key)
            v = self.kn.value(v) if v is not None else None
            if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                    v is _known.UNKNOWN or math.isnan(v):
                v = None
            bounds.append(v)
        return tuple(bounds)

    def routing(self, idx, n, d, note=""):
        """The uniform (or --routing-imbalance) routing of the module's
        docstring, for indices IDX into N experts: k choices a row at
        dimension D (topk), or one (D None: argmax, max(dim), ...)."""
        k = idx.shape[d] if d is not None else 1
        total = idx.numel()
        rows = total // max(k, 1)
        if rows == 0:
            return None
        key = (tuple(idx.shape), idx.dtype, n, d)
        r = self.routes.get(key)
        if r is None:
            r = self.routes[key] = self._route(idx, n, d, k, total, rows)
        how = "uniform" if self.imbalance == 1.0 else \
            "imbalance %g" % self.imbalance
        assume(self.rec, "routing", "%s E=%d k=%d%s" % (how, n, k, note))
        with self.unset():
            return r.clone()

    def _route(self, idx, n, d, k, total, rows):
        torch = self.torch
        counts = shares(total, n, rows, self.imbalance)
        with self.unset():
            seq = torch.repeat_interleave(
                torch.arange(n, dtype=torch.long),
                torch.tensor(counts, dtype=torch.long))
            # column-major: choice j of row t is seq[j * rows + p(t)]
            r = seq.reshape(k, rows).t()   # (rows, k)
            # p(t) = t * stride mod rows: consecutive rows (the tokens of
            # one sequence) go round the experts, as independent draws
            # spread them, instead of a sequence's tokens to one or two
            # experts in a block, which a per-sequence capacity
            # (SwitchTransformersTop1Router's cumsum over the sequence)
            # would drop; the counts and a row's distinct choices are
            # the same under any permutation of the rows
            r = r[(torch.arange(rows, dtype=torch.long) *
                   route_stride(rows, -(-total // n))) % rows].contiguous()
            if d is None:
                r = r.reshape(tuple(idx.shape))
            else:
                shape = list(idx.shape)
                del shape[d]
                r = r.reshape(shape + [k]).movedim(-1, d).contiguous()
            r = r.to(idx.dtype)
        return r


def route_stride(rows, block):
    """The stride of the routing's row order (Values._route): the least
    integer from BLOCK (an expert's share of a column, rows k / E) that
    is prime to ROWS, so that t -> t * stride mod rows is a permutation
    and rows t and t + 1 fall in neighbouring experts' blocks; 1 where
    there is one block."""
    if block >= rows:
        return 1
    s = max(block, 1)
    while math.gcd(s, rows) != 1:
        s += 1
    return s


def shares(total, n, rows, imbalance):
    """How many of TOTAL choices (ROWS rows) each of N experts gets:
    total / n each, expert 0 IMBALANCE times that (at most ROWS), largest
    remainders to the lowest experts."""
    if n == 1:
        return [total]
    if imbalance == 1.0:
        c0 = None
    else:
        c0 = min(rows, int(round(imbalance * total / n)), total)
    rest_n = n if c0 is None else n - 1
    rest = total if c0 is None else total - c0
    base, extra = divmod(rest, rest_n)
    out = [base + (1 if i < extra else 0) for i in range(rest_n)]
    return out if c0 is None else [c0] + out


def written_inplace(func):
    return any(a.alias_info is not None and a.alias_info.is_write
               for a in func._schema.arguments)


def spread(torch, n, f):
    """Values.mask's rule for N elements of unknown value, a flat bool
    tensor: the fraction F of them true, spread evenly and ending on the
    last (element n-1-j true where ceil((j + 1) f) > ceil(j f); the
    ceil as in Values.count)."""
    c = torch.ceil(torch.arange(n + 1, dtype=torch.float64) * f *
                   (1 - 1e-12))
    return (c[1:] > c[:-1]).flip(0)


def normal_params(torch, name, args, kwargs):
    """(mean, std, False) of a normal random op's elements (NORMAL: randn and
    randn_like standard, normal_(mean, std), normal(mean, std, size) of
    two numbers), or None."""
    if name in ("randn", "randn_like"):
        return (0.0, 1.0, False)
    if name == "normal_":
        m = args[1] if len(args) > 1 else kwargs.get("mean", 0.0)
        sd = args[2] if len(args) > 2 else kwargs.get("std", 1.0)
    elif name == "normal":
        m = args[0] if args else kwargs.get("mean")
        sd = args[1] if len(args) > 1 else kwargs.get("std", 1.0)
    else:
        return None
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or
           not math.isfinite(v) for v in (m, sd)) or sd <= 0:
        return None
    return (float(m), float(sd), False)


def normal_between(lo, hi):
    """The probability that a standard normal draw lies in [lo, hi]."""
    if hi <= lo:
        return 0.0
    r = math.sqrt(2.0)
    return max(0.0, 0.5 * (math.erfc(-hi / r) - math.erfc(-lo / r)))


def random_range(torch, name, args, kwargs, out):
    """The range of a random op's values, or None."""
    def arg(i, key, default=None):
        if i < len(args):
            return args[i]
        return kwargs.get(key, default)
    try:
        if name in ("uniform", "uniform_"):
            return Range(float(arg(1, "from", 0.0)), float(arg(2, "to", 1.0)),
                         True, False)
        if name in ("rand", "rand_like"):
            return Range(0.0, 1.0, True, False)
        if name == "randint":
            if len(args) >= 3 or "low" in kwargs:
                lo, hi = int(arg(0, "low")), int(arg(1, "high"))
            else:
                lo, hi = 0, int(arg(0, "high"))
            return Range(lo, hi - 1, False, True)
        if name == "randint_like":
            a1 = arg(1, "high")
            if len(args) > 2 or "low" in kwargs:
                lo, hi = int(arg(1, "low")), int(arg(2, "high"))
            else:
                lo, hi = 0, int(a1)
            return Range(lo, hi - 1, False, True)
        if name in ("random", "random_"):
            if len(args) >= 3:
                lo, hi = args[1], args[2]
            elif len(args) == 2:
                lo, hi = 0, args[1]
            else:
                lo, hi = kwargs.get("from", 0), kwargs.get("to")
            if hi is None:
                return None
            return Range(int(lo), int(hi) - 1, False, True)
        if name in ("bernoulli", "bernoulli_"):
            return Range(0, 1, False, True)
        if name == "randperm":
            return Range(0, int(args[0]) - 1, False, True)
        if name == "multinomial":
            return Range(0, int(args[0].shape[-1]) - 1, False, True)
    except (TypeError, ValueError):
        return None
    return None


# -- CPU stand-ins for kernels only the GPU has ------------------------------
def _named(func, a2, k2):
    names = [a.name for a in func._schema.arguments]
    d = dict(zip(names, a2))
    d.update(k2)
    return d


def _zeros_like_outs(torch, out):
    return [torch.zeros(tuple(o.shape), dtype=o.dtype)
            if isinstance(o, torch.Tensor) else o for o in out]


def _sdpa_fwd(torch, func, a2, k2, out):
    """cuDNN / flash / memory-efficient attention forward on the CPU: the
    output by the math path; the other outputs (softmax stats, RNG state)
    zeros: their values serve only the backward below."""
    d = _named(func, a2, k2)
    o = torch._C._nn.scaled_dot_product_attention(
        d["query"], d["key"], d["value"], attn_mask=d.get("attn_bias"),
        dropout_p=0.0, is_causal=bool(d.get("is_causal", False)),
        scale=d.get("scale"),
        enable_gqa=d["query"].shape[1] != d["key"].shape[1])
    rest = _zeros_like_outs(torch, out)
    rest[0] = o.to(out[0].dtype)
    return tuple(rest)


def _sdpa_bwd(torch, func, a2, k2, out):
    """Their backward: the math path's gradients, written out (no autograd
    here: the op runs below the autograd keys)."""
    d = _named(func, a2, k2)
    go = d.get("grad_out", d.get("grad_out_"))
    q, k, v = d["query"], d["key"], d["value"]
    dt = q.dtype
    q, k, v, go = (t.float() for t in (q, k, v, go))
    g = q.shape[1] // k.shape[1]
    if g > 1:                      # grouped-query attention
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
    scale = d.get("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * scale
    bias = d.get("attn_bias")
    if bias is not None:
        s = s + bias.float()
    if d.get("is_causal"):
        lq, lk = s.shape[-2], s.shape[-1]
        keep = torch.ones(lq, lk, dtype=torch.bool).tril()  # top left
        s = s.masked_fill(~keep, float("-inf"))
    # a query row that every key is masked from (a left-padded position
    # under a padding mask) attends to nothing: probabilities 0, as the
    # math path's _safe_softmax gives them (the forward above) and the
    # fused kernels' output of such a row (0) has; softmax's NaN made
    # every gradient NaN (TRL's GKD trainer, which left-pads its
    # generated batches: NaN weights after its first step)
    p = torch.ops.aten._safe_softmax(s, -1)
    dv = p.transpose(-2, -1) @ go
    dp = go @ v.transpose(-2, -1)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    dq = ds @ k * scale
    dk = ds.transpose(-2, -1) @ q * scale
    if g > 1:
        b, h = dk.shape[0], dk.shape[1] // g
        dk = dk.reshape(b, h, g, *dk.shape[2:]).sum(2)
        dv = dv.reshape(b, h, g, *dv.shape[2:]).sum(2)
    rest = _zeros_like_outs(torch, out)
    rest[0], rest[1], rest[2] = (t.to(dt) for t in (dq, dk, dv))
    return tuple(rest)


def _bn_fwd(torch, func, a2, k2, out):
    """cuDNN's batch norm (cudnn_batch_norm, which CUDA's training-mode
    batch_norm dispatches to) on the CPU: native_batch_norm, in float32
    for a half input (cuDNN takes half data with float parameters); the
    running statistics are updated in place, as cuDNN's are.  Its
    save_var is the saved inverse standard deviation (cuDNN's
    resultSaveInvVariance), native_batch_norm's save_invstd; the reserve
    space zeros."""
    d = _named(func, a2, k2)
    x = d["input"]
    w, b = (t.float() if isinstance(t, torch.Tensor) else t
            for t in (d["weight"], d.get("bias")))
    res = torch.ops.aten.native_batch_norm(
        x.float(), w, b, d.get("running_mean"),
        d.get("running_var"), d["training"],
        d["exponential_average_factor"], d["epsilon"])
    rest = _zeros_like_outs(torch, out)
    for i, t in enumerate(res):
        if tuple(t.shape) == tuple(rest[i].shape):
            rest[i] = t.to(rest[i].dtype)
    return tuple(rest)


def _bn_native(torch, func, a2, k2, out):
    """native_batch_norm on the CPU, its save_mean and save_invstd as a
    CUDA tensor's are: in evaluation (training False) batch_norm_cuda_out
    (aten/src/ATen/native/cuda/Normalization.cu) copies running_mean into
    save_mean and writes save_invstd = 1 / sqrt(running_var + eps)
    (batch_norm_calc_invstd), C elements each in the accumulate type,
    where the CPU's batch_norm_cpu returns them empty.  Without them a
    frozen BatchNorm's backward (native_batch_norm_backward, which reads
    the running statistics in evaluation) had inputs of unknown values,
    and the gradients below it went unknown (RAFT's freeze_bn)."""
    res = list(func(*a2, **k2))
    d = _named(func, a2, k2)
    rm, rv = d.get("running_mean"), d.get("running_var")
    if not d.get("training") and isinstance(rm, torch.Tensor) and \
            isinstance(rv, torch.Tensor):
        for i, v in ((1, rm), (2, (rv.double() + d["eps"]).rsqrt())):
            o = out[i]
            if isinstance(o, torch.Tensor) and tuple(o.shape) != \
                    tuple(res[i].shape) and tuple(o.shape) == tuple(v.shape):
                res[i] = v.to(o.dtype)
    return tuple(res)


def _bn_bwd(torch, func, a2, k2, out):
    """cudnn_batch_norm_backward on the CPU: native_batch_norm_backward of
    the training mode, from the saved mean and inverse deviation."""
    d = _named(func, a2, k2)
    x = d["input"]
    w = d["weight"]
    res = torch.ops.aten.native_batch_norm_backward(
        d["grad_output"].float(), x.float(),
        w.float() if isinstance(w, torch.Tensor) else w,
        d.get("running_mean"), d.get("running_var"), d.get("save_mean"),
        d.get("save_var"), True, d["epsilon"], [True, True, True])
    rest = _zeros_like_outs(torch, out)
    for i, t in enumerate(res):
        if isinstance(t, torch.Tensor) and \
                tuple(t.shape) == tuple(rest[i].shape):
            rest[i] = t.to(rest[i].dtype)
    return tuple(rest)


def _softmax_h2f(torch, func, a2, k2, out):
    """_softmax / _log_softmax with half_to_float (autocast's softmax of
    a half tensor, a float output: CUDA's kernels only) on the CPU: the
    same op of the input made float first."""
    d = _named(func, a2, k2)
    if not d.get("half_to_float"):
        return func(*a2, **k2)
    return func(d["self"].float(), d["dim"], False)


def _softmax_bwd_h2f(torch, func, a2, k2, out):
    """Their backward where the input was half and the output float
    (input_dtype half, float gradients: CUDA's kernels only): in float,
    the gradient made the input's type."""
    d = _named(func, a2, k2)
    g, o, dt = d["grad_output"], d["output"], d["input_dtype"]
    if dt == g.dtype:
        return func(*a2, **k2)
    return func(g.float(), o.float(), d["dim"], torch.float32).to(dt)


def _histc_int(torch, func, a2, k2, out):
    """histc of an integer tensor on the CPU, as CUDA's _histc_cuda
    computes it (SummaryOps.cu): the CUDA build dispatches every type
    (AT_DISPATCH_ALL_TYPES; the output of the input's type), the CPU's
    histogram_histc floating types only
    ("histogram_cpu" not implemented for 'Int').  min and max are made
    the input's type; min == max takes the data's own; equal still, one
    below and one above; an element in [min, max] goes to bin
    (x - min) * bins / (max - min) in integer arithmetic (getBin), bins
    itself made the last.  Transformers' MoE experts (the grouped_mm
    path, integrations/moe.py) count tokens per expert so, from int32
    expert ids on CUDA: their offsets were values:unknown."""
    d = _named(func, a2, k2)
    x = d["self"]
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        return func(*a2, **k2)
    nb = int(d.get("bins", 100))
    lo, hi = int(d.get("min", 0)), int(d.get("max", 0))
    v = x.reshape(-1).long()
    if lo == hi and v.numel():
        lo, hi = int(v.min()), int(v.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not lo < hi:
        raise RuntimeError("max must be larger than min")
    v = v[(v >= lo) & (v <= hi)]
    b = torch.div((v - lo) * nb, hi - lo, rounding_mode="floor")
    b = torch.where(b == nb, b - 1, b)
    return torch.bincount(b, minlength=nb).to(x.dtype)


FALLBACK = {
    "histc": _histc_int,
    "_softmax": _softmax_h2f,
    "_log_softmax": _softmax_h2f,
    "_softmax_backward_data": _softmax_bwd_h2f,
    "_log_softmax_backward_data": _softmax_bwd_h2f,
    "cudnn_batch_norm": _bn_fwd,
    "native_batch_norm": _bn_native,
    "cudnn_batch_norm_backward": _bn_bwd,
    "_scaled_dot_product_cudnn_attention": _sdpa_fwd,
    "_scaled_dot_product_flash_attention": _sdpa_fwd,
    "_scaled_dot_product_efficient_attention": _sdpa_fwd,
    "_scaled_dot_product_cudnn_attention_backward": _sdpa_bwd,
    "_scaled_dot_product_flash_attention_backward": _sdpa_bwd,
    "_scaled_dot_product_efficient_attention_backward": _sdpa_bwd,
}


# The CPU's error for a kernel without half or bfloat16 (AT_DISPATCH's
# "NAME" not implemented for 'Half'): Values._run_upcast computes it in
# float.
LOW_PRECISION = re.compile(r"not implemented for '(Half|BFloat16)'")


# Ops whose output is a host bool computed from GPU data (host_bool).
HOST_BOOL = frozenset(("equal", "allclose"))


def host_bool(rec, name, a, b, *args, **kwargs):
    """torch.equal(A, B) or torch.allclose(A, B, ...) of GPU tensors as
    the CUDA build computes them, under the recording mode, so that their
    ops are recorded.  equal (cuda_equal): an error across devices, False
    where the sizes differ, True when empty, else
    at::cuda::eq(a, b).all().item().  allclose (CompositeExplicitAutograd
    allclose): isclose(a, b, rtol, atol, equal_nan).all().item().
    The answer: exact where the values are known (the mask's shadow;
    always under --values cpu); else True for a tensor compared with
    itself or a view of the very same elements (tied weights: assumption
    NAME:same, which assumes no NaN in it); else allclose is True
    (allclose:true) and equal the .item() rule of a bool (item:bool,
    --item-bool)."""
    torch = rec.known.values.torch
    if name == "equal":
        if a.device != b.device:
            raise RuntimeError("Cannot compare two tensors on different "
                               "devices. Got: %s and %s" % (a.device,
                                                            b.device))
        if tuple(a.shape) != tuple(b.shape):
            return False
        if a.numel() == 0:
            return True
    rec.known.in_host_bool = True
    try:
        # eq (isclose) then all(): temporaries of one C++ expression,
        # freed when it ends, all()'s result first
        if name == "equal":
            e = torch.eq(a, b)
        else:
            e = torch.isclose(a, b, *args, **kwargs)
        m = e.all()
    finally:
        rec.known.in_host_bool = False
    r = _host_bool_answer(rec, name, a, b, m)
    del m, e
    return r


def _host_bool_answer(rec, name, a, b, m):
    """host_bool's answer from M, the all() of the comparison."""
    v = rec.known.item(m)
    if v is not _known.UNKNOWN:
        return bool(v)
    if a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and \
            id(a.untyped_storage()) == id(b.untyped_storage()) and \
            a.storage_offset() == b.storage_offset() and \
            a.stride() == b.stride():
        assume(rec, name + ":same", True)
        return True
    vs = rec.known.values
    if vs is not None and vs.twins(a, b):
        # the same computation of the same elements (Values._twin)
        assume(rec, name + ":same", True)
        return True
    if name == "allclose":
        # programs compare two computations of one quantity and stop
        # when they differ (assumption allclose:true)
        rec.assume("allclose:true")
        return True
    return bool(m.item())


def loaded(rec, t, real):
    """T, a fake GPU tensor torch.load made of the host tensor REAL (the
    file's values, host._Load): REAL is its shadow where T is small enough
    for one (every tensor under --values cpu)."""
    vs = rec.known.values
    if vs._small(t):
        with vs.unset():
            vs._set(t, real.detach().clone())


def loaded_param(rec, p, data):
    """P, the nn.Parameter torch.load made of DATA (torch._utils'
    _rebuild_parameter: Parameter(data, requires_grad), a new tensor on
    DATA's storage), made with the fake mode set aside (host._Load), so
    that no op told the recorder: DATA's shadow is P's too."""
    vs = rec.known.values
    if p is data or not isinstance(data, vs.Fake):
        return
    r = vs._registered(data)
    if r is not None:
        vs._set(p, r)


def uploaded(rec, t):
    """Whether T's values are a host tensor's (Values._upload)."""
    vs = rec.known.values
    return bool(vs.uploads) and vs._upload_of(t) is not None


def host_values(rec, t):
    """A real CPU tensor of T's shape and dtype with its values, for the
    recorder's .cpu() of a fake CUDA tensor (docs/recording-values.md)."""
    return rec.known.values.host(t)


def rms_norm_fwd(rec, x, weight, shape, eps, out, rstd):
    """The values of fake.py's fused rms_norm (its output and rstd are
    made empty there), where x's and weight's are known."""
    vs = rec.known.values
    torch = vs.torch
    rx = vs.real(x)
    rw = vs.real(weight) if weight is not None else None
    if rx is None or (weight is not None and rw is None):
        return
    n = len(shape)
    with vs.unset():
        if eps is None:
            eps = torch.finfo(x.dtype).eps
        xf = rx.float()
        dims = tuple(range(-n, 0))
        r = torch.rsqrt(xf.pow(2).mean(dims, keepdim=True) + eps)
        y = xf * r
        if rw is not None:
            y = y * rw.float()
        vs._set(out, vs._layout(out, y.to(out.dtype)))
        vs._set(rstd, vs._layout(rstd, r.to(rstd.dtype)))


def rms_norm_bwd(rec, grad, x, weight, rstd, gx, gw):
    """The values of its backward's gradients."""
    vs = rec.known.values
    rg, rx, rr = vs.real(grad), vs.real(x), vs.real(rstd)
    rw = vs.real(weight) if weight is not None else None
    if rg is None or rx is None or rr is None or \
            (weight is not None and rw is None):
        return
    with vs.unset():
        # rstd keeps the normalized dimensions as ones
        n = sum(1 for i in range(1, rr.dim() + 1)
                if rr.shape[-i] == 1 and rx.shape[-i] != 1)
        n = max(n, 1)
        dims = tuple(range(-n, 0))
        xh = rx.float() * rr.float()
        gwx = rg.float() * (rw.float() if rw is not None else 1.0)
        dx = rr.float() * (gwx - xh * (gwx * xh).mean(dims, keepdim=True))
        vs._set(gx, vs._layout(gx, dx.to(gx.dtype)))
        if gw is not None:
            lead = tuple(range(rx.dim() - n))
            d = (rg.float() * xh).sum(lead) if lead else rg.float() * xh
            vs._set(gw, vs._layout(gw, d.to(gw.dtype)))
