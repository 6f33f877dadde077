#!/usr/bin/env python3
"""Replay memsim requests through PyTorch's own CUDA caching allocator.

memsim validate --mode torch runs this bridge on a machine with PyTorch and
a GPU.  It reads requests, one a line, from the file named on the command
line:

    a ID SIZE STREAM     malloc SIZE bytes on STREAM (0 = default stream)
    x ID SIZE STREAM     a malloc the recording saw fail (expected OOM)
    f ID                 free the block ID
    e                    torch.cuda.empty_cache()

and serves them with torch.cuda.caching_allocator_alloc / _delete under the
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
import sys


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
    with open(path) as fp:
        for line in fp:
            op = line.split()
            if not op:
                continue
            if op[0] in ("a", "x"):
                size, sh = int(op[2]), int(op[3])
                if sh not in streams:
                    streams[sh] = torch.cuda.Stream()
                try:
                    p = torch.cuda.caching_allocator_alloc(size, 0,
                                                           streams[sh])
                except torch.OutOfMemoryError:
                    if op[0] == "a":
                        oom = index
                        break
                    index += 1
                    continue
                allocs += 1
                if op[0] == "x":  # the recording failed here, we did not
                    internal.add(allocs - 1)
                    torch.cuda.caching_allocator_delete(p)
                else:
                    ptrs[op[1]] = p
                index += 1
            elif op[0] == "f":
                torch.cuda.caching_allocator_delete(ptrs.pop(op[1]))
                index += 1
            elif op[0] == "e":
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
