"""The script's life inside the recorder: how it is started (a path, or
-m MODULE as `python3 -m` runs it), the threads it starts (recorded under
the same fake mode, each with its own current stream, as
getCurrentCUDAStream is per thread), the processes it forks (they never
write the trace: that is the recorder's first process's job), and
os._exit() called by the script (the end of the script, in the main
thread; from another thread, one line and no trace).

memsim itself (lab/recproc.c) keeps the rest: the recorder in a process
group of its own, killed with memsim or at --timeout, and the trace
renamed into place only once the whole group is gone.
"""
import functools
import os
import sys
import threading

MAIN_PID = os.getpid()
_SCRIPT_THREADS = set()   # idents of Python threads the script started


class StreamSlot:
    """torch.cuda's current stream: [0] reads and sets it.  A thread the
    script starts has its own, the default stream at first; the main
    thread and the autograd engine's threads share one (backward runs on
    the streams of the forward)."""

    def __init__(self):
        self._shared = 0
        self._local = threading.local()

    def __getitem__(self, i):
        return getattr(self._local, "v", self._shared)

    def __setitem__(self, i, v):
        if hasattr(self._local, "v"):
            self._local.v = v
        else:
            self._shared = v

    def own(self):
        self._local.v = 0


def autograd_node():
    """The autograd node whose backward runs on this thread now, None
    outside a backward or where PyTorch cannot say."""
    try:
        import torch
        return torch._C._current_autograd_node()
    except Exception:
        return None


def autograd_thread():
    """Whether this thread is one of the autograd engine's (not the main
    thread, not a Python thread the script started)."""
    return threading.current_thread() is not threading.main_thread() and \
        threading.get_ident() not in _SCRIPT_THREADS


@functools.lru_cache(maxsize=None)
def _library_paths():
    """The folders of the standard library and installed packages (read
    once: threads start often, these do not change)."""
    import sysconfig
    paths = set()
    where = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = where.get(key)
        if p:
            paths.add(os.path.realpath(p) + os.sep)
    for p in sys.path:
        if p.endswith(("site-packages", "dist-packages")):
            paths.add(os.path.realpath(p) + os.sep)
    return tuple(paths)


@functools.lru_cache(maxsize=None)
def _pool_workers():
    """The worker loops of Python's thread pools, which run the
    callables submitted to them: multiprocessing.pool.ThreadPool's
    workers (DummyProcess threads of multiprocessing.pool.worker: MONAI's
    CacheDataset fills its cache by a ThreadPool's imap of its
    transforms, ToDeviced moving each volume to the GPU) and
    concurrent.futures.ThreadPoolExecutor's (_worker)."""
    fns = []
    try:
        import multiprocessing.pool as mp
        fns.append(mp.worker)
    except (ImportError, AttributeError):
        pass
    try:
        import concurrent.futures.thread as cft
        fns.append(cft._worker)
    except (ImportError, AttributeError):
        pass
    return tuple(getattr(f, "__code__", None) for f in fns)


def _library_thread(thread):
    """Whether THREAD runs code of an installed library or the standard
    library (its target, or its class's run), not the script's own.  A
    thread pool's worker is the script's: the stdlib's loop runs the
    functions the script (or a library on its behalf) submits, which
    may run GPU ops as any thread may (PyTorch's dispatch modes are per
    thread: one without the recorder's runs CUDA's own kernels, "Could
    not run 'aten::empty_strided' with arguments from the 'CUDA'
    backend")."""
    fn = getattr(thread, "_target", None) or type(thread).run
    if getattr(fn, "__code__", None) in _pool_workers():
        return False
    code = getattr(fn, "__code__", None)
    if code is None:
        return True  # a builtin: no Python code of the script's
    return os.path.realpath(code.co_filename).startswith(_library_paths())


def patch_threads(enter, slot):
    """threading.Thread.run runs under the recorder's modes: enter() gives
    the context managers the main thread runs the script in (the fake
    mode is per thread, as every TorchDispatchMode is).  Returns a
    function that undoes it; the first exception a thread raised, if
    any, is in .failed (as threading.excepthook sees it)."""
    orig_run = threading.Thread.run
    orig_hook = threading.excepthook
    failed = []

    def run(self):
        _SCRIPT_THREADS.add(threading.get_ident())
        slot.own()
        try:
            if _library_thread(self):
                # host work of a library (DataLoader's pin-memory loop,
                # tqdm's monitor, a log writer): as without the recorder
                # (a script's thread runs under the modes: fake.py keeps
                # the fake mode's in_kernel_invocation per thread and
                # records one op at a time)
                orig_run(self)
                return
            modes = enter()
            for m in modes:
                m.__enter__()
            try:
                orig_run(self)
            finally:
                for m in reversed(modes):
                    m.__exit__(None, None, None)
        finally:
            _SCRIPT_THREADS.discard(threading.get_ident())

    def hook(args):
        if os.getpid() == MAIN_PID and not failed and \
                args.exc_type is not SystemExit:
            import traceback
            tb = traceback.extract_tb(args.exc_traceback)
            where = ("%s:%d" % (tb[-1].filename, tb[-1].lineno)) if tb \
                else "?"
            failed.append("thread %s raised %s: %s (at %s)" % (
                args.thread.name if args.thread else "?",
                args.exc_type.__name__, args.exc_value, where))
        orig_hook(args)

    threading.Thread.run = run
    threading.excepthook = hook

    def undo():
        threading.Thread.run = orig_run
        threading.excepthook = orig_hook

    undo.failed = failed
    return undo


def accelerate_launch(opt, device):
    """`memsim record -- accelerate launch [ITS OPTIONS] SCRIPT ARGS`: the
    launch command's arguments (opt.script and opt.args) read as
    accelerate reads them (launch_command_parser, _validate_launch_command:
    the user's accelerate config file included), the environment its
    launcher gives the script (prepare_simple_launcher_cmd_env, or
    prepare_multi_gpu_env for --multi_gpu, --use_fsdp, --use_megatron_lm)
    set here, and the script recorded in this process: one rank, of
    --num_processes ranks unless --world-size says otherwise.  The
    launcher's own questions to CUDA (how many GPUs, bf16) are answered
    as the recording's device would, one GPU a rank."""
    import contextlib
    import torch
    from accelerate.commands.launch import launch_command_parser, \
        _validate_launch_command
    from accelerate.utils import launch as al

    @contextlib.contextmanager
    def gpus():
        c = torch.cuda
        saved = (c.is_available, c.device_count, c.is_bf16_supported)
        c.is_available = lambda: True
        c.device_count = lambda: opt.world_size
        c.is_bf16_supported = lambda *a, **k: device[1] >= 8
        try:
            yield
        finally:
            c.is_available, c.device_count, c.is_bf16_supported = saved

    argv = [opt.script] + list(opt.args)
    args = launch_command_parser().parse_args(argv)

    def refuse():
        for flag, what in (("use_deepspeed", "DeepSpeed"), ("tpu", "TPUs")):
            if getattr(args, flag, False):
                raise ValueError("%s is not modelled (record the script "
                                 "with python3 and --world-size)" % what)

    refuse()   # before accelerate's warnings, when given on the line
    with gpus():
        args, _, _ = _validate_launch_command(args)
        refuse()   # from the config file
        multi = args.multi_gpu or args.use_fsdp or args.use_megatron_lm
        if multi:
            args.main_process_port = args.main_process_port or 29500
            env = al.prepare_multi_gpu_env(args)
        else:
            _, env = al.prepare_simple_launcher_cmd_env(args)
    if args.no_python:
        raise ValueError("--no_python is not supported: the script must "
                         "be Python")
    os.environ.update(env)
    opt.script = args.training_script
    opt.args = list(args.training_script_args)
    opt.module = bool(args.module)
    if multi and not opt.world_size_given:
        opt.world_size = max(1, int(args.num_processes))
    if not 0 <= opt.rank < opt.world_size:
        raise ValueError("--rank %d: must be below the %d process%s it "
                         "launches" % (opt.rank, opt.world_size,
                                       "" if opt.world_size == 1 else "es"))


def resolve_module(name):
    """The file `python3 -m NAME` runs (a package's __main__), or raises
    ImportError.  The current folder is first on sys.path, as for -m."""
    import importlib.util
    sys.path.insert(0, os.getcwd())
    spec = importlib.util.find_spec(name)
    if spec is not None and spec.submodule_search_locations is not None:
        spec = importlib.util.find_spec(name + ".__main__")
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        raise ImportError("no module named %s" % name)
    return spec.origin


SCRIPT_GLOBALS = []


def collect_at_dynamo_import(in_script):
    """The full collection a real run makes when its script first
    imports torch._dynamo through torch._disable_dynamo's lazy wrapper
    (torch._compile): torch.optim's first optimizer
    (Optimizer.add_param_group) among others.  (torch.compile's import
    is not this path: compiled.py collects before a graph's first run.)
    In a real run the import makes tens
    of thousands of objects (Dynamo, sympy, symbolic_shapes), and
    Python's cyclic collector runs a full collection in it, freeing the
    GPU tensors the script left in reference cycles.  Torch-Pruning's
    count_ops_and_params deep-copies the model each pruning step, each
    copy a cycle of its own bound methods: in a real run the
    fine-tuning's SGD frees them.  The recorder imported torch._dynamo
    before the script began (FakeTensorMode needs it), so the script's
    import costs nothing and the collection never came: the copies
    stayed to the end, +45% allocated (tp-groupnorm-vgg19).  So the
    script's first import of torch._dynamo (IN_SCRIPT(): the script's
    code, not the recorder's dispatch) makes that collection.  Returns
    the function that takes the hook off."""
    import builtins
    import gc
    if "torch._dynamo" not in sys.modules:
        return lambda: None   # the script's import is real: it collects
    orig = builtins.__import__
    own = __name__.rpartition(".")[0] + "."

    def imports_dynamo(name, fromlist, level):
        if level:
            return False
        if name == "torch._dynamo" or name.startswith("torch._dynamo."):
            return True
        return name == "torch" and bool(fromlist) and "_dynamo" in fromlist

    def lazy_script_import(frame):
        # torch._disable_dynamo's wrapper (torch._compile) around one
        # of PyTorch's functions that a real run calls: not the fake
        # mode's __torch_dispatch__ (the recorder's), nor torch.manual_seed,
        # which torch._dynamo's own import wraps (a real run calls that
        # wrapper only once torch._dynamo is there)
        if frame.f_globals.get("__name__") != "torch._compile":
            return False
        fn = frame.f_locals.get("fn")
        rnd = sys.modules.get("torch.random")
        if fn is None or fn is getattr(rnd, "manual_seed", None) or \
                getattr(fn, "__name__", "") == "__torch_dispatch__":
            return False
        mod = str(getattr(fn, "__module__", "") or "")
        return not (mod.startswith("torch._subclasses") or
                    mod.startswith(own))

    def hooked(name, globals=None, locals=None, fromlist=(), level=0):
        if builtins.__import__ is hooked and \
                imports_dynamo(name, fromlist, level) and in_script() and \
                lazy_script_import(sys._getframe(1)):
            builtins.__import__ = orig
            gc.collect()
        return orig(name, globals, locals, fromlist, level)

    builtins.__import__ = hooked

    def undo():
        if builtins.__import__ is hooked:
            builtins.__import__ = orig
    return undo


def run_main(opt, script):
    """Runs the script as __main__: its path, or its module (-m)."""
    import gc
    import runpy
    mod = getattr(opt, "module_name", None)
    try:
        # The script's globals, as runpy returns them, are kept: dropped
        # here they would free the model and its optimizer's state after
        # the script's end in some recordings (those where nothing else
        # held them) and not in others (docs/recording-boundary.md,
        # "The script's end").
        if mod:
            SCRIPT_GLOBALS.append(runpy.run_module(
                mod, run_name="__main__", alter_sys=True))
        else:
            SCRIPT_GLOBALS.append(runpy.run_path(script,
                                                 run_name="__main__"))
    finally:
        # The script has ended; what it leaves in reference cycles (a
        # trainer and its callbacks, holding the model and its optimizer)
        # stays live in the trace, as at a real program's exit, not freed
        # by a collection the recorder's own work would set off.  (This
        # alone did not make mingpt-chargpt's ending the same in every
        # recording: docs/recording-boundary.md, "The script's end".)
        gc.disable()


def forked_end():
    """In a process the script forked that has come to the script's end:
    ends it there.  Only the recorder's own process writes the trace."""
    if os.getpid() != MAIN_PID:
        sys.stdout.flush()
        sys.stderr.flush()
        _REAL_EXIT(0)


_REAL_EXIT = os._exit


class OsExit(SystemExit):
    """os._exit(code) called by the script in the main thread: the end of
    the script with that status (handled as sys.exit)."""


def patch_os_exit(prog, script):
    """os._exit in the recorder's process: in the main thread it ends the
    script as sys.exit would (its trace is then written); from another
    thread it ends the process at once, after one line.  Forked children
    (DataLoader workers, multiprocessing) keep the real one.  Returns
    the function that undoes it."""
    orig = os._exit

    def _exit(code):
        if os.getpid() != MAIN_PID:
            return orig(code)
        if threading.current_thread() is threading.main_thread():
            raise OsExit(code)
        f = sys._getframe(1)
        print("%s: %s called os._exit(%s) from thread %s at %s:%d; no "
              "trace written" % (prog, script, code,
                                 threading.current_thread().name,
                                 f.f_code.co_filename, f.f_lineno),
              file=sys.stderr)
        sys.stderr.flush()
        orig(code if code else 1)

    os._exit = _exit

    def undo():
        os._exit = orig

    return undo
