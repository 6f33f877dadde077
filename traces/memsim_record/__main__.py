"""python3 -m memsim_record -o OUT [options] -- SCRIPT ARGS...: see __init__."""
import argparse
import os
import sys

from . import devices
from . import lifecycle

PROG = "memsim record"

# Assumptions whose meaning for the peaks is told once after the
# recording's summary line (cuDNN's finds: a lower bound).
NOTES = {
    "cudnn:benchmark-find": (
        "torch.backends.cudnn.benchmark is on: at the first call of each "
        "convolution key in a thread cuDNN's find takes a workspace as large "
        "as its largest candidate plan (often gigabytes), cuDNN's own: the "
        "recording gives it the chosen plan's, or for fp32 convolutions of "
        "stride 1 cuDNN's FFT's where larger (docs/recording.md), then the "
        "emptyCache that follows it; the peaks are a lower bound"),
    "cudnn:fft-possible": lambda rec: (
        "cuDNN's heuristics may run fp32 convolutions of kernels 7x7 and "
        "larger by FFT (on the H200 about a third of such shapes, cuDNN's "
        "choice): a workspace of up to %d bytes a call beyond the "
        "recording's, not counted in the peaks (memsim info lists each "
        "line's)" % rec.fft_largest),
    "compile:pad_mm-large": (
        "Inductor's pad_mm benchmarks a half-precision matmul of at least "
        "10^10 multiply-adds, which the recording keeps unpadded; on an "
        "H200 pad_mm padded 8 of 9 such shapes (docs/recording-compile.md), "
        "and a padded head changes the compiled program's buffers: the "
        "peaks may be a few percent off (llm.c's GPT-2 head: -5%)"),
    "allocator-model:absent": (
        "the script read torch.cuda.memory_reserved(), memory_stats() or "
        "mem_get_info() with no caching allocator modelled beside the "
        "recording (MEMSIM_LIBRARY names no libmemsim with "
        "memsim_live_open): it was told the live blocks, as "
        "memory_allocated(); `memsim run` of the trace gives the "
        "allocator's figures"),
    "allocator-model:lost": (
        "the caching allocator modelled beside the recording refused a "
        "request (memsim info names it) and was set aside: the script's "
        "later memory_reserved() and --oom follow the live blocks"),
}


def parse(argv):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Record a PyTorch script's GPU allocations "
        "as a CSV trace for memsim.")
    ap.add_argument("-o", "--output", required=True, help="the trace (CSV)")
    m = ap.add_mutually_exclusive_group()
    m.add_argument("--fake", dest="mode", action="store_const", const="fake",
                   help="fake tensors, no GPU (default)")
    m.add_argument("--gpu", dest="mode", action="store_const", const="gpu",
                   help="a real run with the allocator's history on")
    ap.set_defaults(mode="fake")
    ap.add_argument("--device", default="h200", choices=sorted(
        devices.DEVICES), help="what CUDA answers under --fake")
    ap.add_argument("--world-size", type=int, default=None)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--amp", choices=("none", "bf16", "fp16"), default="none")
    ap.add_argument("--checkpoint", default="none",
                    help="none, every:K or sqrt")
    ap.add_argument("--dynamic-fraction", type=float, default=0.5,
                    help="fraction of elements nonzero/masked_select/unique "
                    "select (default 0.5)")
    ap.add_argument("--item-int", type=int, default=1,
                    help="what an integer .item() returns (default 1)")
    ap.add_argument("--item-bool", choices=("false", "true"),
                    default="false",
                    help="what a bool .item() of unknown value returns "
                    "(default false)")
    ap.add_argument("--item-repeats", type=int, default=100000,
                    help="stop when one line asks for an unknown .item() "
                    "more than this many times (default 100000)")
    ap.add_argument("--snapshot", metavar="FILE",
                    help="--gpu: also dump the snapshot pickle, with C++ and "
                    "Python stack frames, to FILE")
    ap.add_argument("--values", choices=("rules", "cpu"), default="rules",
                    help="--fake: the values of GPU tensors: rules (small "
                    "exact tensors, ranges, uniform MoE routing; default) or "
                    "cpu (every op computed on the CPU at its real shapes; "
                    "slower) (docs/recording-values.md)")
    ap.add_argument("--routing-imbalance", type=float, default=1.0,
                    metavar="F", help="--values rules: the first expert of "
                    "a top-k routing gets F times its uniform share of "
                    "the tokens (default 1: uniform)")
    ap.add_argument("--oom", action="store_true",
                    help="--fake: raise torch.OutOfMemoryError where the "
                    "caching allocator cannot serve a block within "
                    "--device's memory less its CUDA context, as the GPU "
                    "would (a program that catches it, as "
                    "auto_find_batch_size does, takes its GPU path)")
    ap.add_argument("--symbolic", metavar="NAME=V[:MAX]",
                    help="--fake: the script runs with setting NAME at V; "
                    "sizes V become a symbol and the trace's sizes "
                    "expressions in NAME (docs/symbolic-sizes.md)")
    ap.add_argument("--module", action="store_true",
                    help="SCRIPT is a module, run as python3 -m runs it")
    ap.add_argument("--launcher", choices=("accelerate",),
                    help="SCRIPT ARGS are `accelerate launch`'s arguments "
                    "(memsim record -- accelerate launch ...)")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    opt = ap.parse_args(argv)
    if opt.amp == "none":
        opt.amp = None
    opt.item_bool = opt.item_bool == "true"
    if opt.item_repeats < 1:
        ap.error("--item-repeats must be at least 1")
    opt.world_size_given = opt.world_size is not None
    if not opt.world_size_given:
        opt.world_size = 1
    if opt.world_size < 1:
        ap.error("--world-size must be at least 1")
    if not 0 <= opt.rank < opt.world_size and not opt.launcher:
        ap.error("--rank must be in [0, --world-size)")
    if not opt.routing_imbalance >= 1.0 or \
            opt.routing_imbalance == float("inf"):
        ap.error("--routing-imbalance must be a number, at least 1")
    if not 0.0 <= opt.dynamic_fraction <= 1.0:
        ap.error("--dynamic-fraction must be in [0, 1]")
    try:
        from .strategy import parse_checkpoint
        parse_checkpoint(opt.checkpoint)
    except ValueError as e:
        ap.error("--checkpoint %s: %s" % (opt.checkpoint, e))
    if opt.symbolic is not None:
        from .symbolic import parse as parse_symbolic
        try:
            opt.symbolic = parse_symbolic(opt.symbolic)
        except ValueError as e:
            ap.error(str(e))
        if opt.mode != "fake":
            ap.error("--symbolic needs --fake")
        if opt.oom:
            # the sizes are a symbol's: where one would not fit depends
            # on its value
            ap.error("--oom: not with --symbolic")
    if opt.oom and opt.mode != "fake":
        ap.error("--oom needs --fake (a real run raises its own)")
    if opt.args and opt.args[0] == "--":
        opt.args = opt.args[1:]
    return opt


def record_gpu(opt, tmp):
    import traceback
    import torch
    if not torch.cuda.is_available():
        return 1, "CUDA is not available (use --fake)"
    torch.cuda.memory._record_memory_history(
        enabled="all", context="alloc" if opt.snapshot else None,
        stacks="all" if opt.snapshot else "python", max_entries=10**8)
    from . import pools
    pe = pools.install(torch)
    sys.argv = [opt.script] + list(opt.args)
    status, msg = 0, None
    try:
        lifecycle.run_main(opt, opt.script)
    except SystemExit as e:
        if isinstance(e.code, int) and e.code:
            status, msg = e.code, "%s exited with status %d" % (opt.script,
                                                                e.code)
        elif e.code not in (None, 0):
            status, msg = 1, "%s exited: %s" % (opt.script, e.code)
    except BaseException as e:
        status, msg = 1, "%s raised %s: %s\n%s" % (
            opt.script, type(e).__name__, e, traceback.format_exc(limit=-4))
    try:
        torch.cuda.synchronize()
    except Exception as e:  # e.g. the script raised inside a graph capture
        if status == 0:
            status, msg = 1, "synchronize after %s raised %s: %s" % (
                opt.script, type(e).__name__, e)
        return status, msg
    snap = torch.cuda.memory._snapshot()
    if opt.snapshot:
        import pickle
        with open(opt.snapshot, "wb") as fp:
            pickle.dump(snap, fp)
    torch.cuda.memory._record_memory_history(enabled=None)
    traces = [t for t in snap["device_traces"] if t]
    if status == 0 and not traces:
        return 1, "%s never allocated GPU memory" % opt.script
    with open(tmp, "w") as fp:
        pools.write_csv(fp, pools.merge(traces[0] if traces else [],
                                        pe.numbered()))
    st = torch.cuda.memory_stats()
    print("%s: peak allocated %d, peak reserved %d, segments %d allocated "
          "%d freed (real run)" % (
              PROG, torch.cuda.max_memory_allocated(),
              torch.cuda.max_memory_reserved(),
              st.get("segment.all.allocated", 0),
              st.get("segment.all.freed", 0)), file=sys.stderr)
    return status, msg


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:   # memsim fit and sweep: server.py
        from . import server
        return server.main(argv[1:])
    opt = parse(argv)
    opt.module_name = None
    if opt.launcher == "accelerate":
        try:
            lifecycle.accelerate_launch(opt, devices.DEVICES[opt.device])
        except Exception as e:  # accelerate's own refusal, or not there
            print("%s: accelerate launch: %s" % (PROG, e), file=sys.stderr)
            return 2
    if opt.module:
        opt.module_name = opt.script
        try:
            opt.script = lifecycle.resolve_module(opt.module_name)
        except Exception as e:  # the package's own import failed
            print("%s: -m %s: %s" % (PROG, opt.module_name, e),
                  file=sys.stderr)
            return 2
    if not os.path.isfile(opt.script):
        print("%s: %s: no such script" % (PROG, opt.script), file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("%s: PyTorch is not installed (pip install torch)" % PROG,
              file=sys.stderr)
        return 2
    out = opt.output
    tmp = "%s.tmp%d" % (out, os.getpid())
    if not opt.module:
        sys.path.insert(0, os.path.dirname(os.path.abspath(opt.script)))
    # Should the interpreter die by a signal (a native crash), the Python
    # lines running then go to OUT.fault<pid>, which `memsim record`
    # prints (cli/cmd_record.c) and removes.
    fault = "%s.fault%d" % (out, os.getpid())
    try:
        import faulthandler
        fault_fp = open(fault, "w")
        faulthandler.enable(file=fault_fp, all_threads=True)
    except OSError:
        fault_fp = None
    undo_exit = lifecycle.patch_os_exit(PROG, opt.script)
    try:
        if opt.mode == "gpu":
            status, msg = record_gpu(opt, tmp)
            lifecycle.forked_end()
        else:
            from . import fake
            rec, status, msg = fake.run(opt, opt.script, opt.args)
            lifecycle.forked_end()
            if status == 0:
                import gc
                gc.collect()
                if not any(r[0] == "alloc" for r in rec.rows):
                    status, msg = 1, ("%s never allocated GPU memory (no "
                                      "CUDA tensor was created)" % opt.script)
                else:
                    from . import symbolic
                    try:
                        rec.write(tmp)
                    except symbolic.Refused as e:
                        # memsim fit and sweep record per value instead
                        print("%s: --symbolic %s=%d refused: %s; no trace "
                              "written" % (PROG, opt.symbolic[0],
                                           opt.symbolic[1], e),
                              file=sys.stderr)
                        return symbolic.EXIT_REFUSED
                    n = sum(rec.assumptions.values())
                    print("%s: %d allocations, peak live %d bytes; %d "
                          "assumption%s%s" % (
                              PROG, sum(1 for r in rec.rows
                                        if r[0] == "alloc"),
                              rec.peak, n, "" if n == 1 else "s",
                              (" (" + ", ".join(
                                  "%s %d" % kv for kv in
                                  sorted(rec.assumptions.items())) + ")")
                              if n else ""), file=sys.stderr)
                    if rec.over_at is not None:
                        print("%s: note: %s the %s's memory (less its "
                              "CUDA context) at %s: on that GPU the script "
                              "runs out of memory there (`memsim run "
                              "--capacity %s` shows where); --oom raises "
                              "torch.OutOfMemoryError there, for a script "
                              "that catches it (auto_find_batch_size)" % (
                                  PROG, "the caching allocator ran out of"
                                  if rec.model else "the live blocks passed",
                                  opt.device, rec.over_at, opt.device),
                              file=sys.stderr)
                    for kind in sorted(rec.assumptions):
                        note = NOTES.get(kind)
                        if callable(note):
                            note = note(rec)
                        if note:
                            print("%s: note: %s" % (PROG, note),
                                  file=sys.stderr)
                    from . import shards
                    shards.report(PROG, sys.stderr)
        if status != 0:
            # a traceback follows the one-line reason
            head, nl, tb = msg.partition("\n")
            print("%s: %s; no trace written%s%s" % (PROG, head, nl,
                                                     tb.rstrip("\n")),
                  file=sys.stderr)
            if opt.mode != "gpu" and \
                    getattr(opt, "values", "") == "rules" and \
                    " raised " in head:
                from . import values
                note = values.failure_note(rec)
                if note:
                    print("%s: note: %s" % (PROG, note), file=sys.stderr)
            return status if 0 < status < 256 else 1
        os.replace(tmp, out)
        return 0
    finally:
        undo_exit()
        if os.getpid() != lifecycle.MAIN_PID:
            os._exit(1)
        if os.path.exists(tmp):
            os.unlink(tmp)
        import shutil
        for d in devices.STANDINS:
            shutil.rmtree(d, ignore_errors=True)
        if fault_fp is not None:
            faulthandler.disable()
            fault_fp.close()
            os.unlink(fault)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
