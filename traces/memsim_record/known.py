"""--fake: values known exactly, and the guard against endless loops.

Fake tensors carry shapes and dtypes, not values, so every `.item()`
(aten._local_scalar_dense) is answered by an assumption (fake._item_value).
Some tensors' values are known all the same: those whose every element is
one Python scalar ("uniform" tensors), made by full/ones/zeros/*_like/
scalar_tensor or a constant (torch.tensor(3): aten.lift_fresh), and what
elementwise ops, views, copies and reductions make of them.  A
`generate()`-style loop stops on such a value: Hugging Face's
MaxLengthCriteria returns torch.full((B,), cur_len >= max_length), the
StoppingCriteriaList ORs the criteria into torch.full((B,), False), and
`unfinished = unfinished & ~is_done` starts from torch.ones(B): when the
length is reached, `unfinished.max() == 0` is known True whatever the
unknown EOS criterion (isin(last_tokens, eos)) says, since
True | unknown = True.

Three-valued logic: an op with an unknown operand is unknown unless the
known one decides (False & x = False, True | x = True, 0 * x = 0 for
integers and bools, where() with a known condition).  A tensor's value is
kept in a weak, id-keyed map (nothing is kept alive) with its storage's
write count: any op that writes to a storage (an in-place op, out=, copy_,
resize_) forgets the values of every tensor on it, and an in-place op whose
result is known sets it again.  A script that uses no such tensor pays one
dict lookup per op.

Watch: an unknown `.item()` asked again and again from the same Python line
is a loop on data the fake run does not have; past --item-repeats times the
recording stops with one line naming that line.  Long recordings print
their progress to stderr every 10 s.
"""
import math
import struct
import sys
import time
import weakref

UNKNOWN = object()

# Scores of unknown value compared with a finite sentinel of at least this
# magnitude are assumed to lie strictly inside (-SENTINEL, SENTINEL):
# transformers marks "no score" with -1e9 (_beam_search's initial beam
# scores, _check_early_stop_heuristic's worst_finished_score while no beam
# has finished, _update_finished_beams' penalties), and a log-probability
# of a finite logit is far above it.  Infinities are not sentinels here:
# masked logits are -inf themselves (top-k/top-p filters), so x > -inf
# stays unknown.
SENTINEL = 1e9

# Ops whose output holds the value of their first argument's elements
# (views, copies, gathers: every element comes from the input).
SAME = frozenset((
    "clone", "alias", "detach", "view", "_unsafe_view", "reshape",
    "_reshape_alias", "expand", "expand_as", "select", "slice", "narrow",
    "unsqueeze", "squeeze", "t", "transpose", "permute", "contiguous",
    "flatten", "unflatten", "movedim", "flip", "roll", "repeat",
    "index_select", "gather", "index", "take", "lift_fresh",
    "lift_fresh_copy", "_to_copy", "to", "_to_dim_order_copy", "type_as",
    "view_as", "reshape_as", "split", "split_with_sizes", "chunk",
    "unbind", "tensor_split", "_unsafe_split", "copy", "max", "min",
    "amax", "amin", "_conj", "positive", "float", "long", "int", "bool",
    "half", "bfloat16", "double", "dequantize", "diagonal", "unfold",
    "squeeze_copy", "view_copy", "expand_copy", "select_copy",
    "slice_copy", "unsqueeze_copy", "t_copy", "transpose_copy",
    "permute_copy", "detach_copy", "alias_copy", "_unsafe_view_copy"))
CREATE = {"ones": 1, "ones_like": 1, "new_ones": 1, "zeros": 0,
          "zeros_like": 0, "new_zeros": 0, "zero": 0}
UNARY = {
    "neg": lambda a: -a,
    "abs": abs,
    "logical_not": lambda a: not a,
    "bitwise_not": lambda a: (not a) if isinstance(a, bool) else ~a,
}
UNARY_F = {
    "isfinite": lambda a: math.isfinite(a),
    "isnan": lambda a: math.isnan(a),
    "isinf": lambda a: math.isinf(a),
}
BINARY = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "mul": lambda a, b: a * b,
    "bitwise_and": lambda a, b: a & b, "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b),
    "maximum": lambda a, b: a if math.isnan(a) or a >= b else b,
    "minimum": lambda a, b: a if math.isnan(a) or a <= b else b,
    "div": lambda a, b: a / b,
}
# Ops beside CREATE that may make a value known from none (Known.after).
_SOURCES_OF_KNOWN = frozenset((
    "full", "full_like", "new_full", "scalar_tensor", "lift_fresh",
    "lift_fresh_copy", "fill", "fill_", "gt", "lt", "ge", "le", "isfinite",
    "isnan", "isinf", "eq", "ne"))

# Ops that make or use a straight-through estimator (Known.straight)
_STRAIGHT = frozenset(("rsub", "sub", "detach", "alias", "clone", "add"))
# Comparisons of a one-element tensor with a known number (Known._note_cmp):
# the operator seen from the tensor's side when the number is the left
# operand (c < x is x > c)
_CMP_FLIP = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq",
             "ne": "ne"}

ALIASES = {"__and__": "bitwise_and", "__or__": "bitwise_or",
           "__xor__": "bitwise_xor", "true_divide": "div",
           "multiply": "mul", "subtract": "sub", "greater": "gt",
           "greater_equal": "ge", "less": "lt", "less_equal": "le",
           "not_equal": "ne", "negative": "neg", "__iand__": "bitwise_and",
           "__ior__": "bitwise_or", "__ixor__": "bitwise_xor",
           # torch._is_all_true / _is_any_true: torch.distributions'
           # argument and sample checks (Distribution.__init__,
           # _validate_sample) ask them of a constraint's check
           "_is_all_true": "all", "_is_any_true": "any"}


class Endless(BaseException):
    """Stops a recording that loops on assumed values.  A BaseException,
    so that the script's own `except Exception` does not swallow it."""


def written_args(cache, func):
    """(position, name) of each argument FUNC's schema marks written (in
    place, out=), kept in CACHE, a dict by op."""
    w = cache.get(func)
    if w is None:
        w = cache[func] = tuple(
            (i, a.name) for i, a in enumerate(func._schema.arguments)
            if a.alias_info is not None and a.alias_info.is_write)
    return w


class Known:
    """The values of uniform tensors (see the module's docstring)."""

    def __init__(self, torch, assume=None, rec=None):
        from torch.utils.weak import WeakIdKeyDictionary
        self.torch = torch
        self.assume = assume
        self.values = None
        if rec is not None:
            # exact values, routing and ranges (values.py)
            from . import values
            self.values = values.Values(torch, rec, self)
            self.assume = rec.assume        # (names the line: values.py)
        self.vals = WeakIdKeyDictionary()   # tensor -> (value, skey, writes)
        # straight-through estimators, t + (c - t).detach(): a tensor of
        # c - t -> (a weak reference to t, its version, c, its own
        # version) (Known.straight)
        self.diffs = WeakIdKeyDictionary()
        self.writes = {}                    # id(storage) -> write count
        self.written = {}                   # func -> written argument slots
        self.tensor = torch.Tensor
        # floating outputs of abs (tensor -> (storage id, version)), as
        # torch.isinf and isfinite compute |x| == inf (_finite_rule)
        self.abs_out = WeakIdKeyDictionary()
        # while a CUDA graph captures (graphs.py): the storages its ops
        # write, which each replay writes again
        self.capture = None
        # the test elements an isin of unknown tokens was assumed not to
        # match (generate()'s EOS ids: isin:no-match): an integer tensor
        # of unknown values compared with one of them by == or != is
        # answered the same way (Known._compute)
        self.absent = set()
        # one-element bool results of comparing a one-element tensor of
        # unknown value with a known number: result -> (op, weak
        # reference to the tensor, the number) (Known.answered)
        self.cmps = WeakIdKeyDictionary()

    # -- values ---------------------------------------------------------
    def value(self, x):
        """X's value (a Python scalar) or UNKNOWN."""
        if isinstance(x, bool) or isinstance(x, (int, float)):
            return x
        if not isinstance(x, self.tensor):
            return UNKNOWN
        c = getattr(x, "constant", None)   # a fake tensor's real constant
        if c is None and type(x) is self.tensor and x.device.type == "cpu":
            c = x                           # a real CPU tensor (allowed)
        if c is not None and c.numel() == 1 and \
                not c.dtype.is_complex:
            from torch._subclasses.fake_tensor import unset_fake_temporarily
            with unset_fake_temporarily():
                return c.reshape(()).tolist()
        ent = self.vals.get(x)
        if ent is not None:
            # the same storage (`t.data = u` swaps it) not written since
            try:
                same = id(x.untyped_storage()) == ent[1]
            except Exception:
                same = False
            if same and self.writes.get(ent[1], 0) == ent[2]:
                return ent[0]
            del self.vals[x]
            return UNKNOWN
        return UNKNOWN

    def item(self, t):
        """What t.item() returns, or UNKNOWN."""
        v = self.value(t)
        if v is UNKNOWN:
            if self.values is not None:
                try:
                    return self.values.item(t)
                except Exception as e:
                    self.values.lost("item", e)
            return v
        return _convert(v, t.dtype, self.torch)

    def _set(self, t, v):
        if not isinstance(t, self.tensor) or v is UNKNOWN:
            return
        v = _convert(v, t.dtype, self.torch)
        if v is UNKNOWN:
            self.vals.pop(t, None)
            return
        try:
            key = id(t.untyped_storage())
        except Exception:
            return
        self.vals[t] = (v, key, self.writes.setdefault(key, 0))

    # -- after each op ----------------------------------------------------
    def after(self, func, name, args, kwargs, out):
        """Notes what FUNC(*ARGS, **KWARGS) -> OUT makes known, and
        forgets what it overwrote."""
        if self.capture is not None:
            self._captured(func, args, kwargs, out)
        vs = self.values
        if vs is not None:
            try:
                vs.after(func, name, args, kwargs, out)
            except Exception as e:     # never the recording's end
                vs.lost(name, e)
        if ALIASES.get(name, name) in _CMP_FLIP and \
                isinstance(out, self.tensor) and out.numel() == 1:
            # (--values cpu too: what a compiled graph computed is not
            # known there either)
            self._note_cmp(ALIASES.get(name, name), args, out)
        if vs is not None and vs.cpu:
            return      # --values cpu: computed, no rule here
        if name == "_is_all_true" and isinstance(out, self.tensor):
            self._check(args, kwargs, out)
            return
        if name in _STRAIGHT and isinstance(out, self.tensor) and \
                (self.diffs or name in ("rsub", "sub")):
            self.straight(name, args, kwargs, out)
        if name == "abs" and isinstance(out, self.tensor) and \
                out.dtype.is_floating_point:
            try:
                self.abs_out[out] = (id(out.untyped_storage()),
                                     out._version)
            except Exception:
                pass
        if not self.vals and name not in CREATE and \
                name not in _SOURCES_OF_KNOWN and \
                not (vs is not None and (vs.ranges or vs.srange)):
            # (x > -1e9: SENTINEL; finite losses; ranges decided)
            return
        written = written_args(self.written, func)
        inplace = name.endswith("_") and not name.startswith("_")
        base = name[:-1] if inplace else name
        base = ALIASES.get(base, base)
        try:
            v = self._compute(base, args, kwargs)
        except (ArithmeticError, TypeError, ValueError):
            v = UNKNOWN
        targets = []
        for i, an in written:
            t = args[i] if i < len(args) else kwargs.get(an)
            # a list for the _foreach_ ops (optimizers' step counts)
            for t in (t if isinstance(t, (list, tuple)) else (t,)):
                if not isinstance(t, self.tensor):
                    continue
                try:
                    k = id(t.untyped_storage())
                except Exception:
                    continue
                if k in self.writes:
                    self.writes[k] += 1
                self.vals.pop(t, None)   # set_ may have changed its storage
                targets.append(t)
        if written:
            # in place (args[0]) or out=: the written tensor is the result
            if v is not UNKNOWN and len(targets) == 1:
                self._set(targets[0], v)
            return
        if v is UNKNOWN:
            return
        if isinstance(out, self.tensor):
            self._set(out, v)
        elif isinstance(out, (tuple, list)) and out:
            if base in ("max", "min"):     # (values, indices)
                self._set(out[0], v)
            elif base in SAME:
                for o in out:
                    self._set(o, v)

    def _note_cmp(self, op, args, out):
        """Notes OUT = OP(X, C) (or OP(C, X)), X a one-element tensor of
        unknown value, C a known number, for Known.answered."""
        if len(args) < 2:
            return
        a, b = args[0], args[1]
        va, vb = self.value(a), self.value(b)
        if va is UNKNOWN and vb is not UNKNOWN and \
                isinstance(a, self.tensor) and a.numel() == 1:
            x, c = a, vb
        elif vb is UNKNOWN and va is not UNKNOWN and \
                isinstance(b, self.tensor) and b.numel() == 1:
            x, c, op = b, va, _CMP_FLIP[op]
        else:
            return
        if self.values is not None and self.values.real(x) is not None:
            return                          # (its values are known)
        if isinstance(c, bool) or not isinstance(c, (int, float)) or \
                not math.isfinite(c) or x.dtype == self.torch.bool or \
                x.dtype.is_complex:
            return
        self.cmps[out] = (op, weakref.ref(x), c)

    def answered(self, t, v):
        """T, a bool tensor, was answered V by an assumption (the
        --item-bool default: fake._item_value).  Where T is a comparison
        of a one-element tensor X of unknown value with a known number C
        (Known._note_cmp), X takes the value nearest C that agrees with
        the answer (C itself for x >= C, x <= C, x == C; C - 1 and C + 1
        for an integral x < C, x > C), so that the program's later reads
        of X agree with what it was told about X.  Python's builtin
        max(x, C) and min(x, C) (bltinmodule.c min_max: `C > x` through
        PyObject_RichCompareBool, Tensor.__bool__, aten::is_nonzero,
        _local_scalar_dense) return x where the answer said x is the
        larger (smaller); int(x), x.__index__ (F.one_hot's num_classes,
        a size) then read it: st-moe-pytorch's safe_one_hot,
        max(indexes.max() + 1 + 1, capacity), answered x >= capacity and
        then x = --item-int (1), made a one-hot of 1 class where the
        capacity's 80 are sliced.  Assumption item:bound, X's value."""
        ent = self.cmps.pop(t, None)
        if ent is None:
            return
        op, ref, c = ent
        x = ref()
        if x is None or self.value(x) is not UNKNOWN:
            return
        rel = op if v else {"lt": "ge", "gt": "le", "le": "gt", "ge": "lt",
                            "eq": "ne", "ne": "eq"}[op]
        if not x.dtype.is_floating_point:
            val = {"ge": math.ceil(c), "le": math.floor(c),
                   "gt": math.floor(c) + 1, "lt": math.ceil(c) - 1,
                   "eq": int(c) if c == int(c) else None}.get(rel)
        else:
            val = c if rel in ("ge", "le", "eq") else None
        if val is None or self.values is None:
            return                          # (x != C: no one value)
        self._set(x, val)
        if self.value(x) is not UNKNOWN:
            from . import values
            values.assume(self.values.rec, "item:bound", self.value(x))

    def _absent(self, test):
        """Notes TEST's elements (isin's test elements: a scalar, or a
        tensor of known values) as absent from unknown tokens."""
        v = self.value(test)
        if v is UNKNOWN and self.values is not None and \
                isinstance(test, self.tensor) and test.numel() <= 64:
            r = self.values.real(test)
            if r is not None:
                from torch._subclasses.fake_tensor import \
                    unset_fake_temporarily
                with unset_fake_temporarily():
                    v = r.reshape(-1).tolist()
        for e in (v if isinstance(v, list) else [v]):
            if isinstance(e, int) and not isinstance(e, bool):
                self.absent.add(e)

    def _unknown_ints(self, u):
        """Whether U is an integer tensor whose values nothing knows (no
        uniform value, no shadow)."""
        if not isinstance(u, self.tensor) or u.dtype.is_floating_point or \
                u.dtype.is_complex or u.dtype == self.torch.bool:
            return False
        if self.value(u) is not UNKNOWN:
            return False
        return self.values is None or self.values.real(u) is None

    def _check(self, args, kwargs, out):
        """torch._is_all_true(valid): its value, all() of VALID's, where
        known (the values' shadow, range or uniform value); else True,
        assumption check:true.  PyTorch asks it only of checks that raise
        when false: torch.distributions' argument and sample checks
        (Distribution.__init__, _validate_sample: `if not
        torch._is_all_true(valid): raise ValueError`) and
        torch._check_tensor_all (cond._is_all_true().item()).  A recorded
        program ran to its end, its checks passed (GPyTorch's
        Normal(mean, stddev) of a predictive variance)."""
        vs = self.values
        if vs is not None and vs._has(out):
            return
        try:
            v = self._compute("all", args, kwargs)
        except (ArithmeticError, TypeError, ValueError):
            v = UNKNOWN
        if v is UNKNOWN:
            v = True
            if vs is not None:
                from . import values
                values.assume(vs.rec, "check:true", v)
        self._set(out, v)

    def straight(self, name, args, kwargs, out):
        """The straight-through estimator, t + (c - t).detach() (a hard
        choice with a soft gradient: straight_through(t, 1.) in
        lucidrains' native-sparse-attention, which then asserts
        `(scale == 1.).all()`): its value is c wherever t's is, known
        when c is.  c - t (rsub of a scalar, or sub of a uniform tensor)
        is noted with t, detach/alias/clone carry the note, and t + it
        (either order, same shape, alpha 1, neither written since) is c.
        Float rounding aside: t + fl(c - t) is c for t within [0, c], as
        the program's own assert says.  An inference tensor (made under
        torch.inference_mode: Ultralytics' validation computes its loss
        so) has no version counter, `_version` raises, so "not written
        since" cannot be told: nothing is noted of one, as t or as c - t.
        The note holds t by a weak reference: PyTorch frees t's storage
        when its last reference goes (c10::StorageImpl's release, the
        caching allocator's free), and in `(1 - x) * y` x goes as soon as
        1 - x is made; a strong one kept x as long as 1 - x lived
        (ermongroup/ddim's generalized_steps, tests/recorder_known_free.sh)."""
        val = self.value
        diffs = self.diffs
        if len(args) < 2 and name not in ("detach", "alias", "clone"):
            return
        if out.is_inference():
            return
        alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
        if name in ("detach", "alias", "clone"):
            ent = diffs.get(args[0]) if args else None
            if ent is not None and ent[3] == args[0]._version and \
                    out.shape == args[0].shape:
                diffs[out] = ent[:3] + (out._version,)
        elif alpha != 1:
            return
        elif name == "rsub" or name == "sub":
            t, c = (args[0], val(args[1])) if name == "rsub" else \
                (args[1], val(args[0]))
            if c is not UNKNOWN and isinstance(t, self.tensor) and \
                    not t.is_inference() and \
                    not isinstance(c, bool) and out.shape == t.shape:
                diffs[out] = (weakref.ref(t), t._version, c, out._version)
        else:       # add
            for t, d in ((args[0], args[1]), (args[1], args[0])):
                ent = diffs.get(d) if isinstance(d, self.tensor) else None
                if ent is not None and ent[0]() is t and \
                        ent[1] == t._version and ent[3] == d._version and \
                        out.shape == t.shape:
                    self._set(out, ent[2])
                    return

    def _captured(self, func, args, kwargs, out):
        """Under a CUDA graph's capture: the storages FUNC writes (its
        outputs, the arguments its schema marks written)."""
        ts = list(out) if isinstance(out, (tuple, list)) else [out]
        for i, a in enumerate(func._schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                t = args[i] if i < len(args) else kwargs.get(a.name)
                ts.extend(t if isinstance(t, (tuple, list)) else (t,))
        for t in ts:
            if isinstance(t, self.tensor):
                try:
                    self.capture.add(id(t.untyped_storage()))
                except Exception:
                    pass

    def rewritten(self, storages):
        """A CUDA graph's replay wrote STORAGES (ids) again: the values
        known of them, and their shadows and ranges (values.py), are
        forgotten."""
        gen = self.values.gen if self.values is not None else None
        for k in storages:
            if k in self.writes:
                self.writes[k] += 1
            if gen is not None:
                gen[k] = gen.get(k, 0) + 1

    def _compute(self, name, args, kwargs):
        val = self.value
        if name in CREATE:
            return CREATE[name]
        if name == "copy_" or name == "copy":
            return val(args[1]) if len(args) > 1 else UNKNOWN
        if name in ("full", "full_like", "fill"):
            return val(args[1]) if len(args) > 1 else UNKNOWN
        if name == "new_full":
            return val(args[2]) if len(args) > 2 else UNKNOWN
        if name == "scalar_tensor":
            return val(args[0])
        if not args:
            return UNKNOWN
        if name in ("max", "min") and len(args) > 1 and \
                isinstance(args[1], self.tensor):
            name = "maximum" if name == "max" else "minimum"
        elif name in SAME:
            return val(args[0])
        if name in UNARY:
            a = val(args[0])
            return UNKNOWN if a is UNKNOWN else UNARY[name](a)
        if name in UNARY_F:
            a = val(args[0])
            if a is not UNKNOWN:
                return UNARY_F[name](a)
            if self.values is not None:
                return self._finite_unary(name, args[0])
            return UNKNOWN
        if name in ("any", "all"):
            x = args[0]
            if x.numel() == 0:
                return name == "all"
            a = val(x)
            return UNKNOWN if a is UNKNOWN else bool(a)
        if name == "sum" and not args[0].dtype.is_floating_point and \
                not args[0].dtype.is_complex:
            a = val(args[0])
            if a is UNKNOWN:
                return a
            # the output's elements each add in.numel() / out.numel()
            # equal inputs
            dims = args[1] if len(args) > 1 else kwargs.get("dim")
            n = args[0].numel()
            if dims is not None and args[0].dim() > 0:
                dims = [dims] if isinstance(dims, int) else dims
                n = 1
                for d in dims or range(args[0].dim()):
                    n *= args[0].shape[d]
            return int(a) * n
        if name == "cat":
            vs = [val(t) for t in args[0]]
            if not vs or any(v is UNKNOWN for v in vs) or \
                    any(v != vs[0] for v in vs):
                return UNKNOWN
            return vs[0]
        if name == "isin" and len(args) > 1:
            # generate()'s token checks: isin(input_ids, pad_token),
            # EosTokenCriteria's isin(input_ids[:, -1], eos_token_id).
            # Tokens of unknown value are assumed to match none of the
            # test elements (no EOS is generated, no pad in the input),
            # as the .item() assumption bool -> False had the loop run to
            # its max length.
            a, b = val(args[0]), val(args[1])
            inv = bool(kwargs.get("invert", False))
            if a is UNKNOWN:
                if self.assume:
                    self.assume("isin:no-match")
                self._absent(args[1])
                return inv
            if b is UNKNOWN:
                return UNKNOWN
            return (a == b) != inv
        if name == "where" and len(args) == 3:
            c, a, b = val(args[0]), val(args[1]), val(args[2])
            if c is not UNKNOWN:
                return a if c else b
            if a is not UNKNOWN and a == b:
                return a
            return UNKNOWN
        if len(args) < 2 or (name not in BINARY and
                             name not in ("add", "sub", "rsub")):
            return UNKNOWN
        a, b = val(args[0]), val(args[1])
        if name in ("add", "sub", "rsub"):
            if a is UNKNOWN or b is UNKNOWN:
                return UNKNOWN
            alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
            if name == "rsub":
                a, b = b, a
            return a + alpha * b if name == "add" else a - alpha * b
        if name in ("eq", "ne") and self.values is not None:
            f = self._finite(name, args, a, b)
            if f is not None:
                return f
        if a is UNKNOWN or b is UNKNOWN:
            if name in ("lt", "le", "gt", "ge") and self.values is not None:
                f = self._finite_vs_inf(name, args, a, b)
                if f is not None:
                    return f
            k = b if a is UNKNOWN else a
            if k is UNKNOWN:
                return UNKNOWN
            if name in ("lt", "le", "gt", "ge", "eq", "ne") and \
                    self.values is not None and \
                    (self.values.ranges or self.values.srange) and \
                    isinstance(k, (int, float)) and \
                    not isinstance(k, bool):
                u = args[0] if a is UNKNOWN else args[1]
                rg = self.values.range(u) if isinstance(u, self.tensor) \
                    else None
                if rg is not None:
                    d = rg.decide(name, k, a is not UNKNOWN)
                    if d is not None:
                        return d
            if name in ("eq", "ne") and k in self.absent and \
                    not isinstance(k, (bool, float)):
                u = args[0] if a is UNKNOWN else args[1]
                if self._unknown_ints(u):
                    # the generated tokens hold no EOS: TRL's GRPO finds
                    # each completion's end by completion_ids == eos
                    # after generate() ran to its max length on the
                    # isin:no-match assumption, and took an empty
                    # completion of every row from the --item-bool
                    # default
                    if self.assume:
                        self.assume("isin:no-match")
                    return name == "ne"
            if name in ("bitwise_and", "logical_and") and k == 0:
                return 0
            if name == "logical_or" and k:
                return True
            if name == "bitwise_or" and k is True:
                return True
            if name == "mul" and k == 0 and not isinstance(k, float):
                other = args[1] if a is UNKNOWN else args[0]
                if not isinstance(other, self.tensor) or \
                        not other.dtype.is_floating_point:
                    return 0
            u = args[0] if a is UNKNOWN else args[1]
            if name in ("lt", "le", "gt", "ge") and \
                    isinstance(u, self.tensor) and \
                    u.dtype.is_floating_point and \
                    isinstance(k, (int, float)) and \
                    not isinstance(k, bool) and abs(k) >= SENTINEL and \
                    math.isfinite(k):
                # a score against a "minus infinity" sentinel
                if self.values is not None:
                    self.assume("compare:sentinel",
                                "x %s %g" % ("above" if k <= -SENTINEL
                                             else "below", k))
                elif self.assume:
                    self.assume("compare:sentinel")
                lo = k <= -SENTINEL        # the sentinel is below
                if a is UNKNOWN:           # x OP k
                    return lo if name in ("gt", "ge") else not lo
                return not lo if name in ("gt", "ge") else lo   # k OP x
            return UNKNOWN
        if name == "div":
            if kwargs.get("rounding_mode") is not None or b == 0:
                return UNKNOWN
            return a / b
        return BINARY[name](a, b)


def _finite_rule(self, name, args, a, b):
    """A loss, a gradient norm (one element, floating, value unknown) is
    finite: x == x and x != inf hold (torch.isfinite / isnan / isinf
    decompose into them).  A floating tensor of any size compared with
    itself holds no NaN: x == x is True everywhere (the support check of
    torch.distributions' constraints.real, which Distribution's
    _validate_sample asks with .all()); and one of any size whose
    absolute value is compared with +inf holds no infinity: |x| == inf
    is False everywhere, as isinf computes it and isfinite's
    (x == x) & (|x| != inf) (a script's assert torch.isfinite(w).all()
    on weights, activations, gradients; a masked score tensor filled
    with -inf is compared with -inf itself, not through abs).  None
    where the rule does not apply.
    """
    x = args[0]
    if not isinstance(x, self.tensor) or not x.dtype.is_floating_point or \
            a is not UNKNOWN:
        return None
    if args[1] is x and (x.numel() == 1 or
                         not getattr(self, "in_host_bool", False)):
        # (torch.equal and allclose answer a tensor against itself by
        # their own rule, values.host_bool: equal:same)
        same = True
    elif isinstance(b, float) and math.isinf(b) and (
            x.numel() == 1 or (b > 0 and self._of_abs(x) and
                               not getattr(self, "in_host_bool", False))):
        same = False
    else:
        return None
    ans = (name == "eq") == same
    from . import values
    values.assume(self.values.rec, "finite", ans)
    return ans


Known._finite = _finite_rule


def _finite_unary(self, name, x):
    """isnan and isinf (their own kernels on CUDA, no decomposition)
    of a floating tensor of unknown value, any size: False everywhere;
    isfinite True (the finite rule above)."""
    if not isinstance(x, self.tensor) or not x.dtype.is_floating_point or \
            getattr(self, "in_host_bool", False):
        # (allclose's and equal's own rule answers inside them)
        return UNKNOWN
    ans = name == "isfinite"
    from . import values
    values.assume(self.values.rec, "finite", ans)
    return ans


Known._finite_unary = _finite_unary


def _finite_vs_inf(self, name, args, a, b):
    """A one-element floating tensor of unknown value (a loss, a
    validation metric) against +inf or -inf, a number or a one-element
    tensor whose value the recording holds (Lightning's EarlyStopping
    and ModelCheckpoint compare the monitored metric with a best score
    that starts as torch.tensor(inf) or -inf): finite, so below +inf and
    above -inf.  None where the rule does not apply."""
    def one(i, v):
        x = args[i]
        if v is UNKNOWN and isinstance(x, self.tensor) and \
                x.numel() == 1:
            r = self.values.real(x)
            if r is not None:
                with self.values.unset():
                    v = r.reshape(()).tolist()
        return v
    if a is UNKNOWN and b is UNKNOWN:
        a, b = one(0, a), one(1, b)
    for i, (u, k) in enumerate(((a, b), (b, a))):
        x = args[i]
        if u is UNKNOWN and isinstance(k, float) and math.isinf(k) and \
                isinstance(x, self.tensor) and x.dtype.is_floating_point \
                and x.numel() == 1:
            below = (name in ("lt", "le")) == (i == 0)   # x below k
            ans = below == (k > 0)
            from . import values
            values.assume(self.values.rec, "finite", ans)
            return ans
    return None


Known._finite_vs_inf = _finite_vs_inf


def _of_abs(self, x):
    """Whether X is an output of abs not written since (its storage and
    version counter, which an in-place op on it or a view bumps)."""
    ent = self.abs_out.get(x)
    if ent is None:
        return False
    try:
        k = id(x.untyped_storage())
    except Exception:
        return False
    return k == ent[0] and x._version == ent[1]


Known._of_abs = _of_abs


def _convert(v, dtype, torch):
    """V as an element of DTYPE, or UNKNOWN where the conversion is not
    exact (a float that DTYPE cannot hold, an integer overflow)."""
    if dtype == torch.bool:
        return bool(v)
    if dtype.is_complex:
        return UNKNOWN
    if not dtype.is_floating_point:
        if isinstance(v, float):
            if not math.isfinite(v):
                return UNKNOWN
            v = int(v)            # casts truncate toward zero
        info = torch.iinfo(dtype)
        v = int(v)
        if not info.min <= v <= info.max:
            return UNKNOWN
        return v
    try:
        f = float(v)
    except OverflowError:
        return UNKNOWN
    if math.isnan(f) or math.isinf(f) or dtype == torch.float64:
        return f
    try:
        if dtype == torch.float32:
            ok = struct.unpack("f", struct.pack("f", f))[0] == f
        elif dtype == torch.float16:
            ok = struct.unpack("e", struct.pack("e", f))[0] == f
        elif dtype == torch.bfloat16:
            bits = struct.unpack("I", struct.pack("f", f))[0]
            ok = struct.unpack("f", struct.pack("f", f))[0] == f and \
                bits & 0xffff == 0
        else:
            ok = False
    except (OverflowError, struct.error):
        ok = False
    return f if ok else UNKNOWN


class Watch:
    """Progress on stderr and the repeated-assumption guard."""

    PERIOD = 10.0
    HINT_AT = 1000

    def __init__(self, rec, prog, limit):
        self.rec = rec
        self.prog = prog
        self.limit = limit
        self.asked = {}
        # the keys of self.asked asked within the optimizer step now
        # running, forgotten at its end (step_done)
        self.in_step = set()
        # every stop and progress hint names --values cpu under the rules,
        # where the program's own values end such a loop (an adaptive ODE
        # solver's `error_ratio <= 1` step test, torchdiffeq's
        # rk_common.py, rejects every step on the --item-bool default)
        self.cpu_hint = "" if getattr(rec.opt, "values", "rules") == \
            "cpu" else ", or record with --values cpu"
        # the line asked most often: (count, FILE:LINE FUNCTION, kind,
        # answer, hint), named on the progress line past HINT_AT asks
        self.top = (0, None, None, None, "")
        self.ops = 0
        self.start = time.monotonic()
        self.last = self.start

    def tick(self):
        self.ops += 1
        if self.ops & 255:
            return
        now = time.monotonic()
        if now - self.last < self.PERIOD:
            return
        self.last = now
        rec = self.rec
        n = sum(rec.assumptions.values())
        line = "%s: %.0f s, %d ops, %d rows, %d bytes live, %d " \
            "assumption%s" % (self.prog, now - self.start, self.ops,
                              len(rec.rows), rec.allocated, n,
                              "" if n == 1 else "s")
        c, where, kind, answer, hint = self.top
        if c >= self.HINT_AT:
            # a loop on values the fake run does not have shows here long
            # before --item-repeats stops it (torchdiffeq's adaptive
            # solvers: about a hundred asks a second)
            line += "; %s asked %d times (%s, answered %r): a loop on " \
                "values the recording does not have? bound it%s" % (
                    where, c, kind, answer, hint)
        print(line, file=sys.stderr, flush=True)

    def assumed(self, kind, answer, hint):
        """Counts an assumption KIND (answered ANSWER) for the Python line
        that asked; raises Endless past the limit.  HINT: the kind's own
        way out (", or give the answer with --item-bool true"), before
        --values cpu's."""
        hint += self.cpu_hint
        f = sys._getframe(2)
        while f is not None:
            fn = f.f_code.co_filename
            if "/torch/" not in fn and "memsim_record" not in fn and \
                    not fn.startswith("<frozen"):
                break
            f = f.f_back
        where = ("%s:%d %s" % (fn, f.f_lineno, f.f_code.co_name)) \
            if f is not None else "torch"
        key = (kind, where)
        n = self.asked.get(key, 0) + 1
        self.asked[key] = n
        if getattr(self.rec, "phase_optimizer", 0):
            self.in_step.add(key)
        if n > self.top[0]:
            self.top = (n, where, kind, answer, hint)
        if n > self.limit:
            what = {"item:bool": "a bool .item()", "item:int": "an integer "
                    ".item()", "item:range": "a .item() of a random value "
                    "(or an index)"}.get(kind, "a float .item()")
            raise Endless(
                "%s asked for %s %d times, each answered by the assumption "
                "%r: a loop on tensor values the fake run does not have "
                "never ends; bound the loop in the script%s" % (
                    where, what, n - 1, answer, hint))

    def step_done(self):
        """An optimizer step has ended (its post-hook): the counts of the
        lines asked within it start again at the next step.  A step asks
        a bounded number of times (Distributed Shampoo: once a
        preconditioner block, `torch.min(L).item()` and its Newton
        root's `while error > tolerance`), and a loop that never ends
        within a step never reaches its end; counted over the steps,
        the asks of a long run passed --item-repeats as one endless
        loop."""
        for key in self.in_step:
            self.asked.pop(key, None)
        self.in_step.clear()
