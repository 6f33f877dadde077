"""Allocator trace windows of the device probes (kernel_probe.py,
wgrad_probe.py, rnn_probe.py, convx_probe.py, conv1d_probe.py,
conv2d_kernel_probe.py, patch_probe.py): start() begins a window of
torch.cuda.memory's history, window() returns its allocations,
forward_backward() takes the windows of a module's forward and backward,
measure() one call's into its row; begin() and save() a probe's command
line and its JSON."""
import json
import sys
import time
import torch


def begin(budget):
    """A probe's OUT.json [SECONDS] (BUDGET by default): (out, seconds,
    start time)."""
    out = sys.argv[1]
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else budget
    return out, secs, time.time()


def save(out, calls, t0):
    """The probe's calls, with PyTorch's, cuDNN's and the device's names,
    as OUT (JSON)."""
    with open(out, "w") as f:
        json.dump({"torch": torch.__version__,
                   "cudnn": torch.backends.cudnn.version(),
                   "device": torch.cuda.get_device_name(0), "calls": calls}, f)
    print(len(calls), "calls", round(time.time() - t0, 1), "s")


def start():
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.memory._record_memory_history(enabled="all", context=None,
                                             stacks="python",
                                             max_entries=100000,
                                             clear_history=True)


def window(ncols=3):
    """Allocations of the window, in order: the first ncols of [size,
    freed in the window (0/1), stream, index in the history]."""
    torch.cuda.synchronize()
    tr = torch.cuda.memory._snapshot()["device_traces"][0]
    rows, live = [], {}
    for i, e in enumerate(tr):
        a = e["action"]
        if a == "alloc":
            live[e["addr"]] = len(rows)
            rows.append([e["size"], 0, e.get("stream", 0), i][:ncols])
        elif a in ("free_requested", "free_completed") and e["addr"] in live:
            rows[live.pop(e["addr"])][1] = 1
    return rows


def forward_backward(mod, x, dt):
    """MOD(X) under autocast to DT ("fp16", "bf16"; "fp32": none), then its
    backward from a random gradient: (output shape, forward window,
    backward window), the windows of window(4)."""
    ad = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(dt)
    start()
    if ad:
        with torch.autocast("cuda", dtype=ad):
            y = mod(x)
    else:
        y = mod(x)
    fw = window(4)
    g = torch.randn_like(y)
    start()
    y.backward(g)
    return list(y.shape), fw, window(4)


def measure(mod, x, dt, row):
    """ROW (a dict naming the call) with forward_backward's windows of
    MOD(X) under DT (out, fw, bw), or the error it raised."""
    try:
        shape, fw, bw = forward_backward(mod, x, dt)
        row.update({"out": shape, "fw": fw, "bw": bw})
    except Exception as e:
        row["error"] = str(e)[:200]
    return row
