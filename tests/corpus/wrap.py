"""Run one corpus program unmodified, as `python3 SCRIPT ARGS...` would.

    python3 wrap.py [--path DIR]... [--steps N] [--chdir DIR]
                    [--serve URL=FILE]... SCRIPT ARGS...

--path DIR   put DIR on sys.path (a program's package folder: minGPT's
             `mingpt`, x-transformers' `x_transformers`), as an installed
             package would be.
--steps N    end the program (exit status 0) right after the N-th
             optimizer step, for the programs that train for 1e5 steps
             with no argument to say fewer: a hook registered with
             torch.optim.optimizer.register_optimizer_step_post_hook raises
             SystemExit(0).
--chdir DIR  run in DIR (relative to the scratch working directory), for
             the programs that open paths relative to their own folder
             (minimind's trainer/ scripts: ../model, ../dataset).
--serve URL=FILE
             answer requests.get(URL) with FILE's bytes (the response's
             .raw, .content, .iter_content), for the programs that
             download their dataset every run with no way to skip it
             (pytorch/examples' gcn: cora.tgz); FILE is the synthetic
             data mkdata.py made.  The corpus runs with no network.

The script's own folder is sys.path[0] and sys.argv is SCRIPT ARGS, as
for `python3 SCRIPT`.  With CORPUS_REAL=FILE in the environment (the real
runs of tests/corpus/device.sh) the program's torch.cuda.max_memory_allocated()
and max_memory_reserved() are written to FILE when it ends, one line
"ALLOCATED RESERVED", whether it ended by returning or by SystemExit.
These are the peaks of the whole run, as `memsim run` of the recording
reports them: a program that calls torch.cuda.reset_peak_memory_stats()
or reset_max_memory_allocated() (to time a second phase, as PyTorch's
AMP recipe does) has the peaks it drops noted first.
With CORPUS_SNAPSHOT=FILE as well, the caching allocator's history is
recorded from the start (torch.cuda.memory._record_memory_history, Python
frames only) and written to FILE at the end
(torch.cuda.memory._dump_snapshot), for comparing a recording with the real
run request by request (tests/corpus/snapdiff.py).
"""
import os
import runpy
import sys


def keep_peaks(dropped):
    """Wrap torch.cuda's peak resets so that the peaks they drop are kept
    in dropped ([allocated, reserved]).  Both names live in
    torch.cuda.memory and are re-exported by torch.cuda."""
    import torch
    import torch.cuda.memory as mem

    def note():
        dropped[0] = max(dropped[0], mem.max_memory_allocated())
        dropped[1] = max(dropped[1], mem.max_memory_reserved())

    for name in ("reset_peak_memory_stats", "reset_max_memory_allocated"):
        orig = getattr(mem, name)

        def reset(*a, _orig=orig, **k):
            note()
            return _orig(*a, **k)
        setattr(mem, name, reset)
        setattr(torch.cuda, name, reset)


def serve(urls):
    """requests.get of a URL in URLS (URL -> FILE) answered from FILE."""
    import io
    import requests

    class Local:
        def __init__(self, path):
            with open(path, "rb") as f:
                self.content = f.read()
            self.raw = io.BytesIO(self.content)
            self.status_code = 200
            self.ok = True
            # the size a server announces (a download helper compares
            # it with the file it has before skipping the download)
            self.headers = {"Content-Length": str(len(self.content))}

        def iter_content(self, chunk_size=1, decode_unicode=False):
            for i in range(0, len(self.content), chunk_size or 1):
                yield self.content[i:i + (chunk_size or 1)]

        def raise_for_status(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    orig = requests.get

    def get(url, *a, **k):
        if url in urls:
            return Local(urls[url])
        return orig(url, *a, **k)
    requests.get = get


def main():
    args = sys.argv[1:]
    paths, steps = [], None
    chdir = None
    urls = {}
    while args and args[0] in ("--path", "--steps", "--chdir", "--serve"):
        if len(args) < 2:
            sys.exit("wrap.py: %s needs a value" % args[0])
        if args[0] == "--path":
            paths.append(os.path.abspath(args[1]))
        elif args[0] == "--serve":
            url, eq, path = args[1].rpartition("=")
            if not eq or not url:
                sys.exit("wrap.py: --serve takes URL=FILE, not %r" % args[1])
            urls[url] = os.path.abspath(path)
        elif args[0] == "--chdir":
            chdir = args[1]
        else:
            steps = int(args[1])
        args = args[2:]
    if not args:
        sys.exit("usage: wrap.py [--path DIR]... [--steps N] [--chdir DIR] "
                 "[--serve URL=FILE]... SCRIPT ARGS...")
    script = os.path.abspath(args[0])
    if chdir is not None:
        os.chdir(chdir)
    sys.argv = [script] + args[1:]
    sys.path[0:0] = [os.path.dirname(script)] + paths
    if urls:
        serve(urls)
    if steps is not None:
        import torch.optim.optimizer as opt
        done = [0]

        def stop(optimizer, a, kw):
            done[0] += 1
            if done[0] >= steps:
                print("wrap.py: %d optimizer steps, stopping" % done[0],
                      file=sys.stderr, flush=True)
                raise SystemExit(0)
        opt.register_optimizer_step_post_hook(stop)
    real = os.environ.get("CORPUS_REAL")
    dropped = [0, 0]
    if real:
        keep_peaks(dropped)
    snapshot = os.environ.get("CORPUS_SNAPSHOT") if real else None
    if snapshot:
        import torch
        torch.cuda.memory._record_memory_history(
            max_entries=int(os.environ.get("CORPUS_SNAPSHOT_ENTRIES",
                                           "1000000")),
            stacks="python")
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        # The program has ended: what it leaves in reference cycles stays
        # (its globals dict and functions are one), as memsim record keeps
        # it at a script's end (lifecycle.run_main), not freed by a
        # collection this wrapper's return might set off (symbolic.sh
        # still leaves the teardown frees out of its comparison)
        import gc
        gc.disable()
        if real:
            import torch
            torch.cuda.synchronize()
            with open(real, "w") as f:
                f.write("%d %d\n" % (
                    max(dropped[0], torch.cuda.max_memory_allocated()),
                    max(dropped[1], torch.cuda.max_memory_reserved())))
            if snapshot:
                torch.cuda.memory._dump_snapshot(snapshot)


if __name__ == "__main__":
    main()
