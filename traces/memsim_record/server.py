"""The fork server: start once, record many (`memsim fit`, `memsim sweep`
over a recording command; lab/recserver.c starts it).

    python3 -m memsim_record --serve FD [SCRIPT]

imports PyTorch, the parts of it a fake recording loads (the fake mode,
torch._dynamo), this recorder, and those of SCRIPT's imports known to be
safe to import before the recorder patches PyTorch (PRELOAD), then serves
requests on the socket FD, one line each way:

    -> [ID, TIMEOUT, "-o", "OUT", OPTIONS..., "--", SCRIPT, ARGS...]  (JSON)
    <- ready PID                         (once, after the imports)
    <- ID PID STATUS TIMEDOUT            (one per request, when it ends)

Each request is a fresh fork of this process running the recorder's
main() on its argv, so it records as `python3 -m memsim_record ARGV` would,
without the start-up; STATUS is its wait status (os.waitpid).  Several
requests may run at once.  Each runs in a process group of its own, as
memsim runs a recorder started alone (lab/recproc.c): after TIMEOUT
seconds (0: none) the group gets SIGTERM, 5 s later SIGKILL (TIMEDOUT 1);
when the recording ends, what is left of its group is killed, and only
then is its line sent (memsim then publishes the trace).  At the
socket's end (memsim is done, or exited, or was killed) or at SIGTERM,
SIGINT or SIGHUP (memsim passes its signals on), the server kills every
recording's group and exits; the kernel kills the server when memsim
dies and each recording when the server dies (PR_SET_PDEATHSIG), so no
process is left behind.
"""
import ast
import errno
import json
import os
import select
import signal
import socket
import sys
import time

# Packages a script may import that are imported here, before the
# recorder patches PyTorch: their import runs no CUDA call and binds no
# function the recorder patches (tests/recorder_server.sh compares the
# traces with separate recordings).
PRELOAD = ("transformers", "numpy", "einops", "tqdm", "safetensors",
           "tokenizers", "sentencepiece", "tiktoken")


def _script_imports(script):
    """(module, names) of SCRIPT's imports from PRELOAD's packages."""
    try:
        with open(script, "rb") as fp:
            tree = ast.parse(fp.read(), script)
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and \
                not node.level:
            out.append((node.module, tuple(a.name for a in node.names
                                           if a.name != "*")))
    return [(m, n) for m, n in out if m.split(".")[0] in PRELOAD]


def preload(script):
    """Imports what every recording of SCRIPT would."""
    import importlib
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch._subclasses.fake_tensor  # noqa: F401
    import torch.utils._python_dispatch  # noqa: F401
    from . import __main__, fake, rnn, strategy, shards, compiled  # noqa
    for mod, names in _script_imports(script) if script else []:
        try:
            m = importlib.import_module(mod)
            for n in names:   # transformers' lazy names load their module
                getattr(m, n, None)
        except Exception:  # the recording itself will say what is wrong
            pass


def _pdeathsig():
    """SIGKILL this process when its parent dies (Linux), and return
    whether the parent is still there."""
    ppid = os.getppid()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    return os.getppid() == ppid


def _child(sock, wake, argv):
    """A request's process: the recorder's main() on argv, in a process
    group of its own; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        sock.close()
        os.close(wake[0])
        os.close(wake[1])
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if not _pdeathsig():
            os._exit(1)
        from . import __main__ as entry, lifecycle
        lifecycle.MAIN_PID = os.getpid()   # this process writes the trace
        try:
            code = entry.main(argv)
        except SystemExit as e:   # argparse's errors
            code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xff if isinstance(code, int) else 1)


def _killpg(pid, sig):
    try:
        os.killpg(pid, sig)
    except OSError as e:
        if e.errno not in (errno.ESRCH, errno.EPERM):
            raise


class _Stop(Exception):
    """A signal memsim passed on: kill every recording, exit."""


def _stop(sig, frame):
    raise _Stop(sig)


def serve(sock):
    """The request loop; returns at the socket's end."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    signal.set_wakeup_fd(w)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop)
    running = {}    # pid -> [request id, deadline or None, timed out]
    buf = b""
    sock.sendall(b"ready %d\n" % os.getpid())
    try:
        while True:
            now = time.monotonic()
            for pid, req in running.items():
                if req[1] is not None and now >= req[1]:
                    _killpg(pid, signal.SIGKILL if req[2] else
                            signal.SIGTERM)
                    req[1] = None if req[2] else now + 5
                    req[2] = True
            due = [q[1] for q in running.values() if q[1] is not None]
            wait = max(0.0, min(due) - now) if due else None
            try:
                ready, _, _ = select.select([sock, r], [], [], wait)
            except InterruptedError:
                ready = []
            if r in ready:
                os.read(r, 512)
            while running:
                # WNOWAIT: the group is killed while its leader's pid
                # (the group's id) cannot be reused yet
                try:
                    si = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG |
                                   os.WNOWAIT)
                except ChildProcessError:
                    break
                if si is None:
                    break
                pid = si.si_pid
                _killpg(pid, signal.SIGKILL)   # what it left running
                _, status = os.waitpid(pid, 0)
                req = running.pop(pid, None)
                if req is not None:
                    sock.sendall(b"%d %d %d %d\n" % (req[0], pid, status,
                                                      req[2]))
            if sock not in ready:
                continue
            data = sock.recv(65536)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line.decode("utf-8", "surrogateescape"))
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(sock, (r, w), [str(a) for a in req[2:]])
                try:
                    os.setpgid(pid, pid)   # also here: no race with kill
                except OSError:
                    pass
                limit = int(req[1])
                running[pid] = [int(req[0]), time.monotonic() + limit
                                if limit else None, False]
    except _Stop:
        pass
    finally:
        for pid in running:
            _killpg(pid, signal.SIGKILL)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def main(argv):
    """--serve FD [SCRIPT]"""
    if not argv or not argv[0].isdigit():
        print("memsim record: --serve FD [SCRIPT]", file=sys.stderr)
        return 2
    if not _pdeathsig():
        return 1
    # Until the loop: SIGINT ends the server as SIGTERM and SIGHUP do
    # (memsim passes its signals on; nothing runs yet).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sock = socket.socket(fileno=int(argv[0]))
    try:
        try:
            preload(argv[1] if len(argv) > 1 else None)
        except Exception as e:
            # memsim then records each value alone, and that recording
            # says what is wrong (no PyTorch: __main__.main)
            if not (isinstance(e, ImportError) and e.name == "torch"):
                print("memsim record: no fork server (%s: %s); each value "
                      "is recorded alone" % (type(e).__name__, e),
                      file=sys.stderr)
            return 3
        import gc
        gc.collect()
        gc.freeze()   # the forks share the imports' pages
        serve(sock)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        sock.close()
    return 0
