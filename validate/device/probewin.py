"""Allocator trace windows of the device probes (kernel_probe.py,
wgrad_probe.py, rnn_probe.py, convx_probe.py): start() begins a window of
torch.cuda.memory's history, window() returns its allocations."""
import torch


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
