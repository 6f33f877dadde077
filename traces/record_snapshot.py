#!/usr/bin/env python3
"""Record a PyTorch memory snapshot of a training script, for memsim.

    python3 record_snapshot.py [-o snapshot.pickle] [--max-entries N]
                               [--frames] train.py [ARGS...]

runs train.py (with its arguments, as `python3 train.py ARGS` would) with
the CUDA caching allocator's history on, then writes the snapshot with
torch.cuda.memory._dump_snapshot(), also when the script raises (an OOM is
worth simulating).  Replay it with `memsim run snapshot.pickle`; to
reproduce the recording itself, `memsim run --recording snapshot.pickle`.
"""
import argparse
import runpy
import sys


def main():
    ap = argparse.ArgumentParser(
        description="Run a PyTorch script with memory history on and "
        "dump a snapshot for memsim.")
    ap.add_argument("-o", "--output", default="snapshot.pickle",
                    help="snapshot file (default snapshot.pickle)")
    ap.add_argument("--max-entries", type=int, default=10_000_000,
                    help="trace entries kept (a ring: the oldest go)")
    ap.add_argument("--frames", action="store_true",
                    help="record Python stack frames too (larger files; "
                    "memsim ignores them)")
    ap.add_argument("script", help="the training script")
    ap.add_argument("args", nargs=argparse.REMAINDER,
                    help="its arguments")
    opt = ap.parse_args()

    import torch
    if not torch.cuda.is_available():
        sys.exit("record_snapshot.py: CUDA is not available")
    torch.cuda.memory._record_memory_history(
        enabled="all", context="all" if opt.frames else None,
        stacks="python", max_entries=opt.max_entries)
    sys.argv = [opt.script] + opt.args
    status = 0
    try:
        runpy.run_path(opt.script, run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback
        traceback.print_exc()
        status = 1
    finally:
        torch.cuda.synchronize()
        torch.cuda.memory._dump_snapshot(opt.output)
        torch.cuda.memory._record_memory_history(enabled=None)
        print("record_snapshot.py: wrote %s; simulate it with "
              "`memsim run %s`" % (opt.output, opt.output),
              file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
