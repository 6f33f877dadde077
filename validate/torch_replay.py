#!/usr/bin/env python3
"""Replay memsim requests through PyTorch's own CUDA caching allocator.

memsim validate --mode torch runs this bridge on a machine with PyTorch and
a GPU.  It reads the requests of the file named on the command line (a
malloc, a malloc the recording saw fail, a free, an empty_cache(): the
request file validate/replayfile.py reads and documents) and serves them with torch.cuda.caching_allocator_alloc / _delete under the
PYTORCH_CUDA_ALLOC_CONF of its environment and, when CAP > 0, under
torch.cuda.set_per_process_memory_fraction(CAP / total memory).  It stops at
the first unexpected out-of-memory, as the ground truth did.  It prints, one
a line:

    meta KEY VALUE       device, versions, total memory
    stat NAME VALUE      every key of torch.cuda.memory_stats()
    event REQUEST ACTION ADDR SIZE
                         every segment_* and oom entry of the recorded
                         history, REQUEST the 0-based request index
    oom REQUEST          the request that raised out-of-memory, or -1
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replayfile  # noqa: E402  (installed beside this file)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: torch_replay.py REQUESTS CAP_BYTES")
    import torch

    path, cap = sys.argv[1], int(sys.argv[2])
    torch.cuda.init()
    props = torch.cuda.get_device_properties(0)
    total = props.total_memory
    if cap > 0:
        torch.cuda.set_per_process_memory_fraction(cap / total)
    torch.cuda.memory._record_memory_history(context=None)
    streams = {0: None}
    ptrs = {}
    oom = -1
    index = 0
    allocs = 0          # successful mallocs so far
    internal = set()    # ordinals of mallocs freed at once (unmatched x)
    for op in replayfile.requests(path):
        if op.op in ("a", "x"):
            if op.stream not in streams:
                streams[op.stream] = torch.cuda.Stream()
            try:
                p = torch.cuda.caching_allocator_alloc(op.size, 0,
                                                       streams[op.stream])
            except torch.OutOfMemoryError:
                if op.op == "a":
                    oom = index
                    break
                index += 1
                continue
            allocs += 1
            if op.op == "x":  # the recording failed here, we did not
                internal.add(allocs - 1)
                torch.cuda.caching_allocator_delete(p)
            else:
                ptrs[op.id] = p
            index += 1
        elif op.op == "f":
            torch.cuda.caching_allocator_delete(ptrs.pop(op.id))
            index += 1
        elif op.op == "e":
            torch.cuda.empty_cache()
    snap = torch.cuda.memory._snapshot()
    stats = torch.cuda.memory_stats()
    out = sys.stdout
    out.write("meta device %s\n" % props.name.replace(" ", "_"))
    out.write("meta total_memory %d\n" % total)
    out.write("meta torch %s\n" % torch.__version__)
    out.write("meta cuda %s\n" % torch.version.cuda)
    out.write("meta alloc_conf %s\n" %
              (torch.cuda.memory._get_allocator_settings()
               if hasattr(torch.cuda.memory, "_get_allocator_settings")
               else "-"))
    for k in sorted(stats):
        out.write("stat %s %d\n" % (k, int(stats[k])))
    req = 0
    ordinal = 0
    skip = set()  # addresses whose next free is part of the same request
    for tr in snap["device_traces"][0]:
        a = tr["action"]
        if a == "alloc":
            if ordinal in internal:
                skip.add(tr["addr"])
            ordinal += 1
            req += 1
        elif a == "free_completed":
            if tr["addr"] in skip:
                skip.discard(tr["addr"])
            else:
                req += 1
        elif a.startswith("segment_"):
            out.write("event %d %s %d %d\n" % (req, a, tr["addr"], tr["size"]))
        elif a == "oom":
            out.write("event %d oom 0 %d\n" % (req, tr["size"]))
            req += 1  # a failed malloc is a request too
    out.write("oom %d\n" % oom)


if __name__ == "__main__":
    main()
