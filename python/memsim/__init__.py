"""memsim: simulate GPU memory allocators from Python.

A thin layer over libmemsim, the C library of memsim (memsim.h), loaded
with ctypes: pure Python, standard library only.  One call replays a trace
(a PyTorch snapshot pickle, device-trace CSV, RMM log or memsim binary
trace) or a generated model ("model:arch=gpt2,batch=8,seq=1024") through
an allocator policy and returns the figures `memsim run --json` prints:

    >>> import memsim
    >>> r = memsim.run("gpt2_varlen.csv", policy="pytorch",
    ...                alloc_conf="max_split_size_mb:128", cap="16GiB")
    >>> r["reserved_bytes.all.peak"] == r.reserved_bytes_all_peak
    True
    >>> r.oom          # did the replay run out of (simulated) memory?
    False
    >>> r.timeline[-1].reserved    # the down-sampled memory curve

The trace may also be an open file (binary or text) or the dict of
torch.cuda.memory._snapshot() itself: memsim.run(torch.cuda.memory.
_snapshot()) replays the snapshot as it ran, no file needed.
memsim.explain() takes the same arguments and says where the memory
goes (the dict of `memsim explain --json`), memsim.summary() gives the
text of torch.cuda.memory_summary(), memsim.tune() the
PYTORCH_CUDA_ALLOC_CONF with the lowest peak under a cap, memsim.fit()
the largest batch (or other value) of recorded traces that fits.

memsim.runs("runs.db") reads back the runs a database holds (as `memsim
run --db`, run(db=...) or sweep(db=...) stored them), and memsim.sweep()
runs every combination of the arguments given as lists.

Errors are raised as memsim.Error with the library's message (naming the
file, line or option at fault) and its code.

The library is found, in this order, at $MEMSIM_LIBRARY, next to this
package, in its _native/lib (where `pip install` puts it), in the libdir
`make install` put it in, then by the system's search
(ctypes.util.find_library).
"""

import collections
import contextlib
import ctypes
import ctypes.util
import itertools
import os
import pickle
import sys
import tempfile

__all__ = ["run", "explain", "summary", "tune", "fit", "runs", "sweep",
           "Result", "Point", "Error", "policies", "library_version"]

# The interface this module is written against: libmemsim.so.1.
_SONAME_MAJOR = 1

# memsim.h's codes (enum memsim_status) by name.
_CODES = {
    -1: "EINVAL", -2: "ENOMEM", -4: "EDB", -5: "EIO", -6: "EFORMAT",
    -7: "ENOTFOUND", -8: "ENOTSUP", -20: "EPOLICY", -21: "EPARAMS",
    -22: "EINPUT", -23: "ECAP", -24: "ESTATE",
}
_INT, _REAL, _TEXT, _BOOL = 1, 2, 3, 4


class Error(Exception):
    """An error of libmemsim: str(e) is its message, e.code its code
    (negative, as in memsim.h) and e.name the code's name ("EPARAMS")."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code
        self.name = _CODES.get(code, "E?")

    def __reduce__(self):
        # Pickled whole (message and code), so an Error raised in a
        # multiprocessing worker reaches the parent (Pool.map would wait
        # for ever on one it cannot unpickle).
        return (type(self), (str(self), self.code))


class Point(collections.namedtuple(
        "Point", "request time_ns allocated reserved active requested "
                 "largest_free free")):
    """One point of the memory curve: requests served before it, the
    simulated time (ns), the current allocated, reserved, active and
    requested bytes, the largest free block and the free bytes the
    policy holds."""
    __slots__ = ()


class _CPoint(ctypes.Structure):
    _fields_ = [("request", ctypes.c_uint64), ("time_ns", ctypes.c_uint64),
                ("allocated", ctypes.c_int64), ("reserved", ctypes.c_int64),
                ("active", ctypes.c_int64), ("requested", ctypes.c_int64),
                ("largest_free", ctypes.c_uint64), ("free", ctypes.c_uint64)]


def _candidates():
    env = os.environ.get("MEMSIM_LIBRARY")
    if env:
        yield env
        return
    if sys.platform == "darwin":
        name = "libmemsim.%d.dylib" % _SONAME_MAJOR
    else:
        name = "libmemsim.so.%d" % _SONAME_MAJOR
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, name)
    # Where `pip install` puts it (setup.py).
    yield os.path.join(here, "_native", "lib", name)
    try:
        from memsim import _build
        yield os.path.join(_build.LIBDIR, name)
    except ImportError:
        pass
    found = ctypes.util.find_library("memsim")
    if found:
        yield found
    yield name


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        break
    else:
        raise Error("libmemsim not found: tried " + ", ".join(tried) +
                    "; set MEMSIM_LIBRARY to its path", -7)
    c_run = ctypes.c_void_p
    sigs = {
        "memsim_version": (ctypes.c_char_p, []),
        "memsim_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        "memsim_policy_name": (ctypes.c_char_p, [ctypes.c_size_t]),
        "memsim_policy_summary": (ctypes.c_char_p, [ctypes.c_size_t]),
        "memsim_open": (ctypes.c_int, [ctypes.POINTER(c_run),
                                       ctypes.c_char_p]),
        "memsim_close": (None, [c_run]),
        "memsim_errmsg": (ctypes.c_char_p, [c_run]),
        "memsim_set_policy": (ctypes.c_int, [c_run, ctypes.c_char_p,
                                             ctypes.c_char_p]),
        "memsim_set_option": (ctypes.c_int, [c_run, ctypes.c_char_p,
                                             ctypes.c_char_p]),
        "memsim_replay": (ctypes.c_int, [c_run]),
        "memsim_count": (ctypes.c_size_t, [c_run]),
        "memsim_name": (ctypes.c_char_p, [c_run, ctypes.c_size_t]),
        "memsim_get_kind": (ctypes.c_int, [c_run, ctypes.c_char_p]),
        "memsim_get_int": (ctypes.c_int, [c_run, ctypes.c_char_p,
                                          ctypes.POINTER(ctypes.c_int64)]),
        "memsim_get_real": (ctypes.c_int, [c_run, ctypes.c_char_p,
                                           ctypes.POINTER(ctypes.c_double)]),
        "memsim_get_text": (ctypes.c_int, [c_run, ctypes.c_char_p,
                                           ctypes.POINTER(ctypes.c_char_p)]),
        "memsim_timeline_len": (ctypes.c_size_t, [c_run]),
        "memsim_timeline_get": (ctypes.c_int, [c_run, ctypes.c_size_t,
                                               ctypes.POINTER(_CPoint)]),
        "memsim_store": (ctypes.c_int, [c_run, ctypes.c_char_p,
                                        ctypes.POINTER(ctypes.c_int64)]),
        "memsim_list_runs": (ctypes.c_int, [
            ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64),
            ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
            ctypes.POINTER(ctypes.c_char_p)]),
        "memsim_load": (ctypes.c_int, [ctypes.POINTER(c_run),
                                       ctypes.c_char_p, ctypes.c_int64]),
        "memsim_explain": (ctypes.c_int, [c_run]),
        "memsim_parse_bytes": (ctypes.c_int, [
            ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]),
        "memsim_tune": (ctypes.c_int, [
            ctypes.c_char_p, ctypes.c_uint64, ctypes.c_char_p,
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
            ctypes.c_size_t]),
        "memsim_fit": (ctypes.c_int, [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.c_long, ctypes.c_long,
            ctypes.c_uint64, ctypes.c_char_p, ctypes.POINTER(ctypes.c_long),
            ctypes.c_char_p, ctypes.c_size_t]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    return lib


def _b(text, what):
    """text (str, bytes or a path) as the C library's bytes; TypeError for
    another type, ValueError for a NUL byte (C would cut the string
    there)."""
    try:
        raw = os.fsencode(text)
    except TypeError:
        raise TypeError("%s: expected str, bytes or a path, not %s"
                        % (what, type(text).__name__)) from None
    if b"\0" in raw:
        raise ValueError("%s: a NUL byte in %r" % (what, text))
    return raw


def _s(raw):
    return raw.decode("utf-8", "replace") if raw is not None else None


def library_version():
    """The version of the libmemsim loaded ("0.1.0")."""
    return _s(_load().memsim_version())


def policies():
    """The policies as [(name, summary), ...], "pytorch" first."""
    lib = _load()
    out, i = [], 0
    while True:
        name = lib.memsim_policy_name(i)
        if name is None:
            return out
        out.append((_s(name), _s(lib.memsim_policy_summary(i))))
        i += 1


class Result(dict):
    """The figures of one run, as a dict of the keys of `memsim run
    --json` in its order (trace, trace_hash, policy, params, cap_bytes,
    requests, the 122 keys of torch.cuda.memory_stats(), oom_request,
    frag_at_peak, ..., wall_ms, and run_id when stored).  Each key reads
    as an attribute too, dots as underscores: r.reserved_bytes_all_peak.
    r.timeline is the memory curve, a list of Point."""

    def __init__(self, figures, timeline):
        super().__init__(figures)
        self.timeline = timeline

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self:
            return self[name]
        dotted = {k.replace(".", "_"): k for k in self}
        if name in dotted:
            return self[dotted[name]]
        raise AttributeError("no figure %r" % name)

    def __dir__(self):
        return list(super().__dir__()) + [k.replace(".", "_") for k in self]

    @property
    def oom(self):
        """Whether the replay ran out of simulated device memory."""
        return self["oom_request"] >= 0

    @property
    def peak_reserved(self):
        """reserved_bytes.all.peak: the bytes the policy held at most."""
        return self["reserved_bytes.all.peak"]

    @property
    def peak_allocated(self):
        """allocated_bytes.all.peak: the bytes of live blocks at most."""
        return self["allocated_bytes.all.peak"]


def _option_text(name, value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if name in ("cap", "capacity") and isinstance(value, float):
        if not value.is_integer():
            raise Error("%s: %r is not a whole number of bytes"
                        % (name, value), -1)
        value = int(value)
    return str(value)


# The library's default policy (MSIM_POLICY_DEFAULT, policies/registry.h;
# memsim.policies() lists it first), spelled here so that the signatures
# of run() and sweep() show it without loading libmemsim at import.
DEFAULT_POLICY = "pytorch"

_OPTIONS = ("cap", "fraction", "capacity", "addresses", "transform",
            "keep_going", "requests_only", "recording", "device",
            "strict", "lenient", "calibration", "context_bytes")


@contextlib.contextmanager
def _trace_path(trace):
    """The path the library reads trace from, and the name its figures
    give it: a path as it is; a snapshot dict (torch.cuda.memory.
    _snapshot()) pickled, and an open file's content copied, into a
    temporary file removed after ("<snapshot dict>", the file's name)."""
    if isinstance(trace, dict):
        data, name = pickle.dumps(trace, protocol=4), "<snapshot dict>"
    elif hasattr(trace, "read"):
        data = trace.read()
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, bytes):
            raise TypeError("trace: the file's read() gave %s, not bytes "
                            "or str" % type(data).__name__)
        name = getattr(trace, "name", None)
        name = name if isinstance(name, str) else "<file object>"
    else:
        yield _b(trace, "trace"), None
        return
    fd, path = tempfile.mkstemp(prefix="memsim-", suffix=".trace")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        yield _b(path, "trace"), name
    finally:
        os.unlink(path)


def _figures(trace, policy, alloc_conf, cap, options, action, db=None):
    """Opens a run of trace (see _trace_path()) with its setting, does
    action (lib.memsim_replay or lib.memsim_explain), stores it in db if
    given, and returns its Result."""
    lib = _load()
    with _trace_path(trace) as (path, name):
        handle = ctypes.c_void_p()
        rc = lib.memsim_open(ctypes.byref(handle), path)
        try:
            def check(rc):
                if rc:
                    msg = _s(lib.memsim_errmsg(handle)) if handle else None
                    msg = msg or _s(lib.memsim_strerror(rc))
                    if name is not None:
                        msg = msg.replace(_s(path), name)
                    raise Error(msg, rc)
            check(rc)
            check(lib.memsim_set_policy(
                handle, _b(policy, "policy"),
                _b(alloc_conf, "alloc_conf") if alloc_conf else None))
            if cap is not None:
                options["cap"] = cap
            for key, value in options.items():
                if key not in _OPTIONS:
                    raise TypeError("unexpected option %r" % key)
                if value is None:
                    continue
                check(lib.memsim_set_option(
                    handle, _b(key, key),
                    _b(_option_text(key, value), key)))
            check(action(lib)(handle))
            if db is not None:
                check(lib.memsim_store(handle, _b(db, "db"), None))
            result = _result(lib, handle, check)
        finally:
            lib.memsim_close(handle)
    if name is not None and "trace" in result:
        result["trace"] = name
    return result


def run(trace, policy=DEFAULT_POLICY, alloc_conf=None, cap=None, db=None,
        as_frame=False, **options):
    """Replays trace through policy and returns its Result.

    trace       a trace file (str or path), an open file of one (binary
                or text), the dict of torch.cuda.memory._snapshot(), or
                "model:KEY=VALUE,..." (the options of `memsim gen
                model`); "trace" in the figures names the file, the
                file object's name or "<snapshot dict>"
    policy      a policy's name (see memsim.policies())
    alloc_conf  its parameters in PYTORCH_CUDA_ALLOC_CONF syntax,
                "max_split_size_mb:128,garbage_collection_threshold:0.6"
    cap         a per-process cap: bytes (int) or "16GiB", "512MiB"
    db          store the run in this SQLite database, as `memsim run
                --db` does (the result then has "run_id")
    options     as `memsim run` takes them: fraction=0.5,
                capacity="80GiB", addresses="trace", transform=
                "dtype=bf16-amp", keep_going=True, requests_only=True,
                recording=True, device=0, strict=True, lenient=True,
                calibration="latency.csv"

    as_frame    True: a pandas DataFrame of one row instead (pandas is
                imported only then)

    An out-of-memory of the simulated device is a result (r.oom,
    r["oom_request"]), not an error.  Raises memsim.Error with the
    library's message for a bad policy, parameter, option or trace.
    """
    r = _figures(trace, policy, alloc_conf, cap, options,
                 lambda lib: lib.memsim_replay, db)
    return _frame([r], True) if as_frame else r


def _nest(flat):
    """The dotted keys of memsim_explain() nested as `memsim explain
    --json` prints them: dicts, and lists where the keys are 0, 1, ..."""
    out = {}
    for key, value in flat.items():
        node, parts = out, key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value

    def lists(node):
        if not isinstance(node, dict):
            return node
        node = {k: lists(v) for k, v in node.items()}
        if node and all(k.isdigit() for k in node):
            return [node[k] for k in sorted(node, key=int)]
        return node
    return lists(out)


def explain(trace, policy=DEFAULT_POLICY, alloc_conf=None, cap=None,
            as_frame=False, **options):
    """Where the memory goes (`memsim explain --json`) for trace under
    the setting run() takes, as a dict: "peak" (the moment reserved bytes
    peak: by pool reserved, allocated, pending, inactive_split and
    whole_free_segments bytes, "categories" and the top "sites"), and
    after an out-of-memory "oom" (PyTorch's "message", the "state" then,
    the "alternatives" replayed), then "summary" and "summary_at_peak"
    (torch.cuda.memory_summary()'s text).  context_bytes="750MiB": the
    CUDA context and libraries, as `memsim explain --context-bytes`
    takes them.  as_frame=True: a pandas
    DataFrame of one row of the dotted keys ("peak.all.reserved").
    Raises memsim.Error as run() does."""
    flat = _figures(trace, policy, alloc_conf, cap, options,
                    lambda lib: lib.memsim_explain)
    return _frame([flat], True) if as_frame else _nest(flat)


def summary(trace, policy=DEFAULT_POLICY, alloc_conf=None, cap=None,
            at_peak=False, **options):
    """The text torch.cuda.memory_summary() prints for trace replayed
    under the setting run() takes, at its end (or its out-of-memory), or
    with at_peak when reserved bytes peak (`memsim summary`)."""
    flat = _figures(trace, policy, alloc_conf, cap, options,
                    lambda lib: lib.memsim_explain)
    return flat["summary_at_peak" if at_peak else "summary"]


def _cap_bytes(lib, cap):
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        return cap
    out = ctypes.c_uint64()
    if isinstance(cap, str) and \
            not lib.memsim_parse_bytes(_b(cap, "cap"), ctypes.byref(out)) \
            and out.value:
        return out.value
    raise Error("cap: %r is not a byte count (16GiB, 512MiB, bytes)"
                % (cap,), -1)


def tune(trace, cap, db=None):
    """`memsim tune`: the PYTORCH_CUDA_ALLOC_CONF of the pytorch policy
    with the lowest peak reserved that fits under cap (bytes or
    "16GiB"), as {"alloc_conf": "max_split_size_mb:...", or "" for the
    defaults, "fits": True} or {"alloc_conf": None, "fits": False} when
    no setting tried fits.  trace is what run() takes; the search is
    stored in db when given (else in a temporary database)."""
    lib = _load()
    cap = _cap_bytes(lib, cap)
    conf = ctypes.create_string_buffer(1024)
    why = ctypes.create_string_buffer(1024)
    with _trace_path(trace) as (path, name), \
            tempfile.TemporaryDirectory(prefix="memsim-") as tmp:
        where = _b(db, "db") if db is not None else \
            _b(os.path.join(tmp, "tune.db"), "db")
        rc = lib.memsim_tune(path, cap, where, conf, len(conf), why,
                             len(why))
    if rc < 0:
        msg = _s(why.value) or _s(lib.memsim_strerror(rc))
        if name is not None:
            msg = msg.replace(_s(path), name)
        raise Error(msg, rc)
    if rc == 1:
        return {"alloc_conf": None, "fits": False}
    return {"alloc_conf": _s(conf.value), "fits": True}


def fit(pattern, name, lo, hi, cap, policy=None):
    """`memsim fit --traces`: the largest value in [lo, hi] of {name} in
    pattern ("gpt-{B}.pickle", traces recorded already, e.g. by `memsim
    record`) whose trace replays under cap (bytes or "16GiB") without
    running out of memory, by bisection, as {"name": name, "best": value}
    (best is lo - 1 when lo already runs out of memory)."""
    lib = _load()
    best = ctypes.c_long()
    why = ctypes.create_string_buffer(1024)
    rc = lib.memsim_fit(_b(pattern, "pattern"), _b(name, "name"), lo, hi,
                        _cap_bytes(lib, cap),
                        _b(policy, "policy") if policy else None,
                        ctypes.byref(best), why, len(why))
    if rc:
        raise Error(_s(why.value) or _s(lib.memsim_strerror(rc)), rc)
    return {"name": name, "best": best.value}


def _result(lib, handle, check):
    """The figures and timeline of a replayed or loaded run handle."""
    figures = {}
    i64, dbl, txt = ctypes.c_int64(), ctypes.c_double(), ctypes.c_char_p()
    for i in range(lib.memsim_count(handle)):
        name = lib.memsim_name(handle, i)
        kind = lib.memsim_get_kind(handle, name)
        if kind in (_INT, _BOOL):
            check(lib.memsim_get_int(handle, name, ctypes.byref(i64)))
            value = bool(i64.value) if kind == _BOOL else i64.value
        elif kind == _REAL:
            check(lib.memsim_get_real(handle, name, ctypes.byref(dbl)))
            value = dbl.value
        else:
            check(lib.memsim_get_text(handle, name, ctypes.byref(txt)))
            value = _s(txt.value)
        figures[_s(name)] = value
    point = _CPoint()
    timeline = []
    for i in range(lib.memsim_timeline_len(handle)):
        check(lib.memsim_timeline_get(handle, i, ctypes.byref(point)))
        timeline.append(Point(*(getattr(point, f) for f in Point._fields)))
    return Result(figures, timeline)


def _frame(rows, as_frame):
    """rows as a pandas DataFrame when asked (None: when pandas is
    importable), else the list itself.  pandas is imported only here."""
    if as_frame is False:
        return rows
    try:
        import pandas
    except ImportError:
        if as_frame:
            raise
        return rows
    return pandas.DataFrame([dict(r) for r in rows])


def runs(db, as_frame=None):
    """The runs stored in the database db (a path), in order of id, as
    a list of Result: the figures `memsim report --json` prints, in its
    order (those of `memsim run --json` the store keeps: trace,
    trace_hash, policy, params, cap_bytes, requests, strategy, the
    memory_stats keys, memsim_version, kind, trace_format, addresses,
    oom_request, frag_at_peak, ..., wall_ms, capacity_bytes, setting_key;
    then created, the run's meta (modelled_device_ms, calibration, ...)
    and run_id); r.timeline is its stored memory curve.  With pandas importable (or as_frame=True), a
    DataFrame of the figures instead, a row per run; as_frame=False
    always gives the list.  Raises memsim.Error (a missing file, not a
    database)."""
    lib = _load()
    path = _b(db, "db")
    n, msg = ctypes.c_size_t(), ctypes.c_char_p()
    rc = lib.memsim_list_runs(path, None, 0, ctypes.byref(n),
                              ctypes.byref(msg))
    ids = (ctypes.c_int64 * max(n.value, 1))()
    if not rc:
        rc = lib.memsim_list_runs(path, ids, n.value, ctypes.byref(n),
                                  ctypes.byref(msg))
    if rc:
        raise Error(_s(msg.value) or _s(lib.memsim_strerror(rc)), rc)
    rows = []
    for run_id in ids[:n.value]:
        handle = ctypes.c_void_p()
        rc = lib.memsim_load(ctypes.byref(handle), path, run_id)
        try:
            def check(rc):
                if rc:
                    text = _s(lib.memsim_errmsg(handle)) if handle \
                        else None
                    raise Error(text or _s(lib.memsim_strerror(rc)), rc)
            check(rc)
            rows.append(_result(lib, handle, check))
        finally:
            lib.memsim_close(handle)
    return _frame(rows, as_frame)


def sweep(trace, policy=DEFAULT_POLICY, alloc_conf=None, cap=None, db=None,
          as_frame=None, **options):
    """Runs every combination of the arguments of run() given as lists
    (or tuples), one after the other in this process, and returns their
    Results in order (the last argument varies fastest), or a pandas
    DataFrame as runs() does.  trace, policy, alloc_conf, cap and each
    option may be a list: sweep(trace, alloc_conf=["",
    "max_split_size_mb:128"], cap=["8GiB", "16GiB"]) replays four
    settings.  With db each is stored as run(db=...) stores it, under its
    setting key, so `memsim sweep` finds it stored (no sweep record is
    written, and nothing runs in parallel: use `memsim sweep -j` for
    that)."""
    axes = [("trace", trace), ("policy", policy),
            ("alloc_conf", alloc_conf), ("cap", cap)]
    axes += sorted(options.items())
    names = [name for name, _ in axes]
    values = [list(v) if isinstance(v, (list, tuple)) else [v]
              for _, v in axes]
    for name, v in zip(names, values):
        if not v:
            raise Error("sweep: %s is an empty list" % name, -1)
    rows = []
    for combo in itertools.product(*values):
        kw = dict(zip(names, combo))
        rows.append(run(kw.pop("trace"), db=db, **kw))
    return _frame(rows, as_frame)


def __getattr__(name):
    if name == "__version__":
        return library_version()
    raise AttributeError("module 'memsim' has no attribute %r" % name)
