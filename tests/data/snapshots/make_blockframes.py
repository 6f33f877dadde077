#!/usr/bin/env python3
"""Writes tests/data/snapshots/r2_11_blockframes.pickle: a PyTorch 2.11
snapshot (pickle.dump of torch.cuda.memory._snapshot()'s dict) of a
partial history whose segment blocks carry 'frames', the stack of each
block's allocation (recorded with stacks).  Standard library only:
    python3 tests/data/snapshots/make_blockframes.py tests/data/snapshots

One large segment of 20 MiB, older than the history.  Before the history
began: A (4 MiB) and B (2 MiB) allocated in model.py:20 build (one frames
list, shared: the pickle memoizes it; an installed torch's Module._apply
and a C++ frame inside it), C (3 MiB, frames []: allocated before
recording began) and F (5 MiB).  The history allocates E (2 MiB,
train.py:30 step) in the 2 MiB free between C and F, then frees F (its
free rows carry the free's stack, not the allocation's).
"""
import os
import pickle
import sys

MiB = 1 << 20
L = 0x7F0000000000
A, B, C, E, F = L, L + 4 * MiB, L + 6 * MiB, L + 9 * MiB, L + 11 * MiB


def fr(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


BUILD = [fr("??", 0, "c10::cuda::CUDACachingAllocator::malloc"),
         fr("/usr/lib/python3/site-packages/torch/nn/modules/module.py",
            1340, "_apply"),
         fr("model.py", 20, "build"), fr("train.py", 5, "<module>")]


def block(addr, size, state, frames):
    return {"address": addr, "size": size, "requested_size": size,
            "state": state, "frames": frames}


def entry(i, action, addr, size, frames):
    return {"action": action, "addr": addr, "size": size, "stream": 0,
            "time_us": 1700000000000000 + 10 * i, "frames": frames,
            "compile_context": "N/A", "user_metadata": ""}


def main(out):
    blocks = [block(A, 4 * MiB, "active_allocated", BUILD),
              block(B, 2 * MiB, "active_allocated", BUILD),
              block(C, 3 * MiB, "active_allocated", []),
              block(E, 2 * MiB, "active_allocated",
                    [fr("train.py", 30, "step")]),
              block(F, 9 * MiB, "inactive", [])]
    seg = {"device": 0, "address": L, "total_size": 20 * MiB,
           "allocated_size": 11 * MiB, "active_size": 11 * MiB,
           "requested_size": 11 * MiB, "stream": 0, "segment_type": "large",
           "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
           "blocks": blocks}
    step = [fr("train.py", 31, "step")]
    trace = [entry(0, "alloc", E, 2 * MiB, [fr("train.py", 30, "step")]),
             entry(1, "free_requested", F, 5 * MiB, step),
             entry(2, "free_completed", F, 5 * MiB, step)]
    snap = {"segments": [seg], "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "",
                                   "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0,
                                   "expandable_segments": False},
            "external_annotations": []}
    with open(os.path.join(out, "r2_11_blockframes.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=4)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
