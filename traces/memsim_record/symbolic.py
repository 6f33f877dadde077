"""--symbolic NAME=V: one recording for a family of sizes
(docs/symbolic-sizes.md).

The script is run with the varied setting at a sentinel value V.  The
fake mode gets a ShapeEnv (torch.fx.experimental.symbolic_shapes); every
size V that crosses into the fake GPU world becomes the one symbol of the
recording: an int V in an argument the op's schema types as SymInt or
SymInt[] (a factory's size, a view's shape), and a dimension V of a host
tensor copied to the GPU (FakeTensorMode.from_tensor with that dimension
DimDynamic.DYNAMIC; the ShapeEnv's duck sizing gives every such
dimension the same symbol).  What follows is PyTorch's own propagation:
each new storage's nbytes is an expression in the symbol, and every
branch on a size (PyTorch's meta functions, the recorder's rules in
kernels.py and dispatch.py, which test sizes with Python's if on a
SymBool: SymBool.__bool__, ShapeEnv.evaluate_expr) records a guard.

Two kernel rules that depend on sizes only, the reduction's buffer and
the convolution's split-K (kernels.RULES), are not run on a symbolic
size: the size is their call, left unevaluated (rule()), which
traces/symtrace.c evaluates per value where the trace is instantiated,
so their tests of sizes (the reduction's powers of two) are no guards.

At the end (finish()): the sizes must be polynomials in the symbol with
integer coefficients (or those calls), and the guards are solved for
the integers where they all hold, the interval that holds V.  The trace (write()) is the
per-value trace with its size column an expression, the symbol named
NAME, and two header lines (docs/symbolic-sizes.md, "The format").  What
cannot be made symbolic (a guard that pins the symbol to V, a size that
is not a polynomial) is refused with one line, and memsim records per
value instead.
"""
import math

MAGIC = "#memsim-symbolic 1"
EXIT_REFUSED = 3   # memsim record's status when refused (lab/record.h)


def hint(n):
    """N, a size, as an int: under --symbolic a SymInt (or a sympy
    expression of Inductor's) by its value at the sentinel, its hint,
    with no guard added, so that a rule choosing by the size does not pin
    the symbol; an unbacked one (data-dependent) by PyTorch's
    optimization_hint, the fallback Inductor's own heuristics read."""
    if type(n) is int:
        return n
    h = getattr(getattr(n, "node", None), "hint", None)
    if h is not None:
        return int(h)
    try:
        from torch.fx.experimental.symbolic_shapes import optimization_hint
    except ImportError:
        return int(n)
    return int(optimization_hint(n))


class Refused(Exception):
    """The recording cannot be one for a family of sizes: why."""


def parse(text):
    """"NAME=V" or "NAME=V:MAX" -> (NAME, V, MAX); V at least 2
    (PyTorch specializes sizes 0 and 1), MAX (default 4096) the largest
    value the trace may be valid for."""
    name, eq, v = text.partition("=")
    if not eq or not name or not (name[0].isalpha() or name[0] == "_") or \
            not all(c.isalnum() or c == "_" for c in name):
        raise ValueError("--symbolic %s: not NAME=VALUE" % text)
    v, _, m = v.partition(":")
    try:
        v = int(v)
        m = int(m) if m else max(4096, v)
    except ValueError:
        raise ValueError("--symbolic %s: not NAME=VALUE[:MAX] with "
                         "integers" % text)
    if v < 2:
        raise ValueError("--symbolic %s: the value must be at least 2 "
                         "(PyTorch specializes sizes 0 and 1)" % text)
    if m < v or m > 1 << 24:
        raise ValueError("--symbolic %s: MAX must be in [VALUE, 2^24]"
                         % text)
    return name, v, m


class Symbolic:
    """The recording's symbol: NAME at its sentinel value V."""

    Refused = Refused

    def __init__(self, torch, name, value, vmax):
        from torch.fx.experimental.symbolic_shapes import ShapeEnv, \
            DimDynamic
        from torch._dynamo.source import ConstantSource
        self.torch = torch
        self.name = name
        self.value = value
        self.max = vmax    # the valid range is looked for up to it
        self.shape_env = ShapeEnv()
        self.Dyn = DimDynamic
        src = ConstantSource("memsim_" + name)
        sym = self.shape_env.create_symbol(
            value, source=src, dynamic_dim=DimDynamic.DUCK)
        self.sym = sym
        self.symint = self.shape_env.create_symintnode(sym, hint=value,
                                                       source=src)
        self.sized = {}    # OpOverload -> indices of its SymInt arguments
        self.hosts = 0     # host tensors made symbolic
        self.py_meta = {}  # OpOverload -> its Python meta, or False
        self.texts = {}    # a size's sympy expression -> its text
        self.rules = {}    # kernels.RULES' name -> its sympy Function
        self.failed = []   # kernel rules that raised on symbolic sizes
        from . import kernels
        kernels._RULE[0] = self.rule
        import os
        if os.environ.get("MEMSIM_SYMBOLIC_DEBUG"):
            # each guard as it is added, with the Python frames that
            # added it (what a refusal's guard came from)
            import sys
            import traceback
            env = self.shape_env
            orig = env._maybe_guard_rel

            def rel(expr):
                print("guard added: %s" % expr, file=sys.stderr)
                for f in traceback.extract_stack()[-60:-1]:
                    print("   %s:%d %s" % (f.filename, f.lineno, f.name),
                          file=sys.stderr)
                return orig(expr)
            env._maybe_guard_rel = rel

    # -- into the fake world -----------------------------------------------
    def _sized(self, func):
        ent = self.sized.get(func)
        if ent is None:
            # the schema's text says SymInt where its Python types say
            # int ("aten::view(Tensor(a) self, SymInt[] size)")
            import re
            ent = []
            try:
                text = str(func._schema)
                names = set(re.findall(r"SymInt(?:\[\d*\])?\?? (\w+)",
                                       text))
                for i, a in enumerate(func._schema.arguments):
                    # select's index is a position, no size: its outputs'
                    # (and select_backward's, select_scatter's)
                    # sizes do not depend on it, and a loop index equal
                    # to V (makemore's RNN, emb[:, i, :]) made the symbol
                    # would only add select's bounds check as a guard
                    # (B < 11)
                    if a.name in names and not (
                            a.name == "index" and func._schema.name in (
                                "aten::select", "aten::select_backward",
                                "aten::select_scatter")):
                        ent.append((i, a.name))
            except (AttributeError, RuntimeError):
                pass
            ent = self.sized[func] = tuple(ent)
        return ent

    def _swap(self, v):
        if type(v) is int and v == self.value:
            return self.symint
        if isinstance(v, (list, tuple)) and any(
                type(x) is int and x == self.value for x in v):
            return type(v)(self.symint if type(x) is int and
                           x == self.value else x for x in v)
        return v

    def convert(self, fm, func, args, kwargs):
        """ARGS and KWARGS of FUNC with V made the symbol: SymInt
        arguments, and host tensors with a dimension V (converted by FM,
        the fake mode)."""
        torch = self.torch
        sized = self._sized(func)
        if sized:
            args = list(args)
            for i, nm in sized:
                if i < len(args):
                    args[i] = self._swap(args[i])
                elif nm in kwargs:
                    kwargs = dict(kwargs)
                    kwargs[nm] = self._swap(kwargs[nm])
        from torch._subclasses.fake_tensor import FakeTensor
        if any(type(a) in (torch.Tensor, torch.nn.Parameter) and
               self.value in a.shape for a in args):
            args = [self._from_host(fm, a)
                    if type(a) in (torch.Tensor, torch.nn.Parameter) and
                    not isinstance(a, FakeTensor) and self.value in a.shape
                    else a for a in args]
        return tuple(args), kwargs

    def run(self, func, args, kwargs):
        """FUNC(*ARGS, **KWARGS) under the fake mode.  An op whose only
        kernel for fake tensors is a C++ CompositeExplicitAutograd one
        that reads sizes() as ints (constant_pad_nd) would pin the
        symbol: with symbolic sizes it runs its Python meta function
        (torch._decomp.meta_table: torch._refs'), as tracing with
        dynamic shapes does."""
        if func.name() in _FFT_OPS and args and \
                isinstance(args[0], self.torch.Tensor) and \
                any(type(v) is not int for v in
                    tuple(args[0].shape) + tuple(args[0].stride())):
            out = _fft_output(self.torch, func.name(), args, kwargs)
            if out is not None:
                return out
        ent = self.py_meta.get(func)
        if ent is None:
            from torch._decomp import meta_table
            has = self.torch._C._dispatch_has_kernel_for_dispatch_key
            nm = func.name()
            ent = self.py_meta[func] = (
                meta_table.get(func) if func in meta_table and
                not has(nm, "Meta") and
                has(nm, "CompositeExplicitAutograd") else False)
        if ent and any(isinstance(a, self.torch.Tensor) and
                       any(type(s) is not int for s in a.shape)
                       for a in args):
            return ent(*args, **kwargs)
        return func(*args, **kwargs)

    def _from_host(self, fm, t):
        from torch.fx.experimental.symbolic_shapes import \
            StatelessSymbolicContext
        from torch._dynamo.source import ConstantSource
        dyn = [self.Dyn.DUCK if s == self.value else self.Dyn.STATIC
               for s in t.shape]
        ctx = StatelessSymbolicContext(dynamic_sizes=dyn)
        self.hosts += 1
        return fm.from_tensor(t, static_shapes=False, symbolic_context=ctx,
                              source=ConstantSource("memsim_host%d" %
                                                    self.hosts))

    def rule(self, name, args):
        """The size NAME(ARGS...) of a kernel rule (kernels.RULES: a
        function of sizes only) as a SymInt: its expression the call,
        left unevaluated, its hint the rule at the sentinel.  Its value is
        the instantiation's to compute (traces/symtrace.c, the same rule
        by the same name), so the rule's own tests of sizes (the
        reduction's powers of two) are no guards here."""
        import sympy
        from . import kernels
        fn, nargs = kernels.RULES[name]
        cls = self.rules.get(name)
        if cls is None:
            def ev(c, *a, _fn=fn):
                if all(x.is_Integer for x in a):
                    return sympy.Integer(_fn(*(int(x) for x in a)))
                return None
            cls = self.rules[name] = type(name, (sympy.Function,), {
                "nargs": nargs, "eval": classmethod(ev),
                "is_integer": True, "is_nonnegative": True})
        hint = fn(*(a if type(a) is int else int(a.node.hint)
                    for a in args))
        expr = cls(*(sympy.Integer(a) if type(a) is int else a.node.expr
                     for a in args))
        return self.shape_env.create_symintnode(expr, hint=hint)

    def optional(self, size):
        """Whether SIZE is a rule's block that is there only where it
        is not 0 (kernels.OPTIONAL)."""
        from . import kernels
        return type(size) is not int and \
            type(size.node.expr).__name__ in kernels.OPTIONAL and \
            type(size.node.expr) in self.rules.values()

    # -- out of it ---------------------------------------------------------
    def text(self, size):
        """SIZE (an int or a SymInt) as the trace writes it: a
        polynomial in NAME with integer coefficients (fmt), or where a
        rule divides, an expression with Python's // and % by positive
        constants (traces/symtrace.h's grammar); Refused otherwise."""
        if type(size) is int:
            return str(size)
        key = size.node.expr
        t = self.texts.get(key)
        if t is None:
            t = self.texts[key] = ("?" if self.optional(size) else "") + \
                self._text(key)
        return t

    def _text(self, expr):
        import sympy
        if type(expr) not in self.rules.values():
            expr = sympy.expand(expr)
        free = expr.free_symbols
        if not free <= {self.sym}:
            raise Refused("a size depends on %s, not only on %s" % (
                ", ".join(sorted(str(s) for s in free - {self.sym})),
                self.name))
        try:
            p = sympy.Poly(expr, self.sym)
            if all(c.is_Integer for c in p.all_coeffs()):
                return self.fmt(tuple(int(c) for c in p.all_coeffs()))
        except sympy.PolynomialError:
            pass
        return self._expr(expr)

    def _expr(self, e):
        """E in the trace's grammar: sums, products, powers, FloorDiv and
        Mod by positive integer constants of integers and the symbol."""
        import sympy
        from torch.utils._sympy.functions import FloorDiv, Mod, PythonMod
        if e.is_Integer:
            return str(int(e))
        if e == self.sym:
            return self.name
        if type(e) in self.rules.values():
            # a kernel rule's size, evaluated per value (traces/symtrace.c;
            # ';' between the arguments: the trace is a CSV)
            return "%s(%s)" % (type(e).__name__, ";".join(
                self._expr(a) for a in e.args))
        if isinstance(e, sympy.Add):
            out = ""
            for t in sympy.Add.make_args(e):
                c, rest = t.as_coeff_Mul()
                if c < 0:
                    out += "-" + self._factor(-t)
                else:
                    out += ("+" if out else "") + self._factor(t)
            return out
        if isinstance(e, sympy.Mul):
            c, rest = e.as_coeff_Mul()
            if c < 0:
                return "-" + self._factor(-e)
            return "*".join(self._factor(f) for f in sympy.Mul.make_args(e))
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
            return "%s^%d" % (self._factor(e.base), int(e.exp))
        if isinstance(e, (FloorDiv, Mod, PythonMod)):
            a, d = e.args
            if not (d.is_Integer and d > 0):
                raise Refused("a size divides by %s, not a positive "
                              "constant: %s" % (self.show(d), self.show(e)))
            # parenthesized whole: "8*((2048*B)//5)", read alike by
            # Python and by traces/symtrace.c
            return "((%s)%s%d)" % (self._expr(a), "//" if isinstance(
                e, FloorDiv) else "%", int(d))
        raise Refused("a size is not an expression of integers and %s "
                      "with + - * ^ // %%: %s" % (self.name, self.show(e)))

    def _factor(self, e):
        """E as a factor of a product: parenthesized where it is a sum
        or negative."""
        import sympy
        t = self._expr(e)
        if isinstance(e, sympy.Add) or t.startswith("-"):
            return "(%s)" % t
        return t

    def fmt(self, coeffs):
        """Coefficients (highest power first) as the trace writes them:
        terms from the highest power, c*NAME^k, no spaces."""
        if len(coeffs) == 1:
            return str(coeffs[0])
        out = []
        n = len(coeffs) - 1
        for k, c in enumerate(coeffs):
            p = n - k
            if c == 0:
                continue
            if p == 0:
                t = str(abs(c))
            else:
                t = self.name if p == 1 else "%s^%d" % (self.name, p)
                if abs(c) != 1:
                    t = "%d*%s" % (abs(c), t)
            out.append(("-" if c < 0 else "+" if out else "") + t)
        return "".join(out) or "0"

    def valid_range(self):
        """The integers around V where every guard holds, within [2,
        MAX]: (lo, hi).  The guards are PyTorch's expressions (FloorDiv,
        Mod, Min, ... of the rules' tests), each printed as Python
        (torch.utils._sympy.printers.PythonPrinter) and evaluated at
        every value from V down and up, so the interval is exact
        whatever their form.  Refused where a guard pins the symbol to V
        (a specialization: the program used the value as an int where a
        size is asked) or cannot be evaluated."""
        from torch.utils._sympy.printers import PythonPrinter
        env = self.shape_env
        s = self.sym
        tests = []
        pr = PythonPrinter()
        for g in env.guards:
            e = g.expr
            if not e.free_symbols:
                continue
            if e.free_symbols != {s}:
                raise Refused("a guard on other sizes: %s" % self.show(e))
            try:
                code = compile(pr.doprint(e), "<guard>", "eval")
            except Exception:
                raise Refused("a guard not evaluated: %s" % self.show(e))
            tests.append((code, e))
        name = str(s)

        def holds(v):
            for code, e in tests:
                try:
                    if not eval(code, {"__builtins__": {}, "math": math},
                                {name: v}):
                        return False
                except Exception:
                    raise Refused("a guard not evaluated at %s=%d: %s" % (
                        self.name, v, self.show(e)))
            return True
        if not holds(self.value):
            raise Refused("the guards do not hold at %s=%d" % (
                self.name, self.value))
        lo = self.value
        while lo > 2 and holds(lo - 1):
            lo -= 1
        hi = self.value
        while hi < self.max and holds(hi + 1):
            hi += 1
        if lo == hi:
            # which guards fail beside V: those that pin it
            def fails(e, code, v):
                return not eval(code, {"__builtins__": {}, "math": math},
                                {name: v})
            pin = [self.show(e) for code, e in tests
                   if (lo > 2 and fails(e, code, lo - 1)) or
                   (hi < self.max and fails(e, code, hi + 1))]
            import sympy
            if any(isinstance(e, sympy.Eq) for _, e in tests):
                raise Refused("a guard pins %s to %d (%s): a size used as "
                              "a plain int (or a float), by the program "
                              "or a kernel rule (MEMSIM_SYMBOLIC_DEBUG=1 "
                              "shows where)" % (self.name, self.value,
                                                ", ".join(pin)))
            raise Refused("the guards hold at %s=%d alone (%s): rules "
                          "branch on both sides of it (another value may "
                          "hold for a range)" % (self.name, self.value,
                                                 ", ".join(pin)))
        return lo, hi

    def show(self, e):
        return str(e).replace(str(self.sym), self.name).replace(" ", "")

    def header(self, lo, hi):
        """The trace's two header lines (docs/symbolic-sizes.md)."""
        gs = [self.show(g.expr) for g in self.shape_env.guards
              if g.expr.free_symbols]
        return "%s\n#symbol %s %d %d %d%s\n" % (
            MAGIC, self.name, self.value, lo, hi,
            "".join(" " + g for g in gs))


_FFT_OPS = ("aten::_fft_r2c", "aten::_fft_c2r", "aten::_fft_c2c")


def _fft_output(torch, name, args, kwargs):
    """The output of a one-plan FFT on CUDA (_fft_r2c, _fft_c2r on
    use_optimized_cufft_path, _fft_c2c of at most three dims) of an input
    with symbolic sizes, as an empty_strided: PyTorch's meta kernels
    (_meta_registrations.py, _exec_fft) resize_ their output to
    the batched sizes, which a fake tensor of symbolic sizes refuses
    ("tried to directly modify sizes for customized tensor"), then
    restride it.  The strides are _exec_fft's: batch dims first, sorted
    by the input's strides (largest first), collapsed into one, then
    the signal dims; the output contiguous in that order.  None (the op
    as it is) elsewhere: the multi-plan paths, not CUDA, not a tensor."""
    x = args[0]
    names = {"aten::_fft_r2c": ("dim", "normalization", "onesided"),
             "aten::_fft_c2r": ("dim", "normalization", "last_dim_size"),
             "aten::_fft_c2c": ("dim", "normalization", "forward")}[name]
    a = dict(zip(names, args[1:]), **kwargs)
    from torch._prims_common import make_contiguous_strides_for
    from . import kernels
    if x.device.type != "cuda" or x.dim() == 0:
        return None
    nd = x.dim()
    dim = kernels.fft_dims(x, a.get("dim"))
    if dim is None:
        return None
    dim = list(dim)
    one_plan = kernels.fft_one_plan(dim)
    sizes = list(x.shape)
    out_sizes = list(sizes)

    if name == "aten::_fft_r2c":
        if not one_plan or not x.dtype.is_floating_point:
            return None
        if a.get("onesided", True):
            out_sizes[dim[-1]] = sizes[dim[-1]] // 2 + 1
        dtype = {torch.float16: torch.complex32,
                 torch.float32: torch.complex64,
                 torch.float64: torch.complex128}.get(x.dtype)
        in_strides = list(x.stride())
    elif name == "aten::_fft_c2r":
        if not one_plan or not x.is_complex() or "last_dim_size" not in a:
            return None
        out_sizes[dim[-1]] = a["last_dim_size"]
        dtype = {torch.complex32: torch.float16,
                 torch.complex64: torch.float32,
                 torch.complex128: torch.float64}.get(x.dtype)
        # the input's clone (gh-34551), contiguous
        in_strides = list(make_contiguous_strides_for(sizes))
    else:
        if len(dim) > kernels.CUFFT_MAX_NDIM or not x.is_complex():
            return None
        dtype = x.dtype
        in_strides = list(x.stride())
        dim = sorted(dim, key=lambda d: in_strides[d], reverse=True)
    if dtype is None:
        return None
    batch = sorted((d for d in range(nd) if d not in dim),
                   key=lambda d: in_strides[d], reverse=True)
    perm = batch + dim
    nb = 1
    for d in batch:
        nb = nb * out_sizes[d]
    cst = make_contiguous_strides_for([nb] + [out_sizes[d] for d in dim])
    out_strides = [0] * nd
    bn = 1
    for i in range(len(batch) - 1, -1, -1):
        out_strides[perm[i]] = bn * cst[0]
        bn = bn * out_sizes[perm[i]]
    for i in range(len(batch), nd):
        out_strides[perm[i]] = cst[1 + i - len(batch)]
    return torch.empty_strided(out_sizes, out_strides, dtype=dtype,
                               device=x.device)
