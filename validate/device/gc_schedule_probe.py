"""Python's cyclic collector's schedule in a real run, for comparing with
a --fake recording's (which frees a script's reference cycles at other
times: its own dispatch makes some ten times the objects the script does,
so its collections come about ten times as often).

    python3 validate/device/gc_schedule_probe.py SCRIPT ARGS...

Runs SCRIPT as __main__ (as python3 SCRIPT ARGS would; kit r40b's wrap.py
with its arguments is a script too) and prints to stderr, each line
beginning "@@ ":
  - every collection of generation 1 or 2, and of 0 where it collected
    more than 200 objects (gc.callbacks), with gc.get_count() after it and
    torch.cuda.memory_allocated() where CUDA is up;
  - every top-level copy.deepcopy of a torch.nn.Module (Torch-Pruning's
    count_ops_and_params copies the model each pruning step): its number,
    gc.get_count() when made, and when it is freed, the generation being
    collected then (None: freed by reference counts);
  - the first import of torch._dynamo.
Made for Torch-Pruning's tp-groupnorm-vgg19 (kit r40b): on an H200 with
Python 3.12 its copies were freed by collections in the 5th and 11th
copies' deep copies and by the Dynamo import (torch.optim.SGD's first
construction), on the CPU with Python 3.11 in the 2nd and 8th copies':
what decides the phase is the objects a run allocates, net, between
collections (700 for generation 0, ten of those for generation 1)."""
import copy
import gc
import runpy
import sys
import weakref

state = {"gen": None, "copies": 0}


def say(msg):
    sys.stderr.write("@@ " + msg + "\n")
    sys.stderr.flush()


def allocated():
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return torch.cuda.memory_allocated()
    except Exception:
        pass
    return None


def on_gc(phase, info):
    if phase == "start":
        state["gen"] = info["generation"]
        return
    state["gen"] = None
    if info["generation"] >= 1 or info["collected"] > 200:
        say("gc gen%d collected=%d count=%s allocated=%s" % (
            info["generation"], info["collected"], gc.get_count(),
            allocated()))


def died(k):
    say("copy %d freed in_gc=%s" % (k, state["gen"]))


orig_deepcopy = copy.deepcopy


def deepcopy(x, memo=None, _nil=[]):
    top = memo is None
    y = orig_deepcopy(x, memo)
    torch = sys.modules.get("torch")
    if top and torch is not None and isinstance(x, torch.nn.Module):
        state["copies"] += 1
        say("copy %d made count=%s allocated=%s" % (
            state["copies"], gc.get_count(), allocated()))
        weakref.finalize(y, died, state["copies"])
    return y


def main():
    import builtins
    orig_import = builtins.__import__

    def imp(name, *a, **k):
        if name.startswith("torch._dynamo") and \
                "torch._dynamo" not in sys.modules:
            say("torch._dynamo import begins count=%s" % (gc.get_count(),))
        return orig_import(name, *a, **k)
    builtins.__import__ = imp
    copy.deepcopy = deepcopy
    gc.callbacks.append(on_gc)
    say("python %s thresholds=%s count=%s" % (
        sys.version.split()[0], gc.get_threshold(), gc.get_count()))
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
