"""The devices --device names: what torch.cuda answers under --fake.

The table is memsim's own (`memsim devices`, sim/gpu.c), written to
devices.json beside this file by `memsim devices --json` (tests/devices.sh
checks that the two agree): total_memory is what
torch.cuda.get_device_properties(0).total_memory and mem_get_info() report
(cudaDeviceProp::totalGlobalMem), with where each figure comes from.
"""

import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "devices.json")) as _f:
    TABLE = json.load(_f)

# name: (marketing name, major, minor, total_memory bytes, SMs)
DEVICES = {d["name"]: (d["label"], d["major"], d["minor"], d["total_bytes"],
                       d["sms"]) for d in TABLE["devices"]}

# name: the L2 cache Triton's autotuner flushes (cards where it is known)
L2_BYTES = {d["name"]: d["l2_bytes"] for d in TABLE["devices"]
            if d["l2_bytes"]}

# name: bytes of CUDA context and libraries a PyTorch process holds
CONTEXT_BYTES = {d["name"]: d["context_bytes"] for d in TABLE["devices"]}


def cublas_workspace_bytes(major, minor, env=None):
    """The cuBLAS workspace one (handle, stream) pair takes from the caching
    allocator: PyTorch's getChosenWorkspaceSize() / parseChosenWorkspaceSize()
    (aten/src/ATen/cuda/CublasHandlePool.cpp): CUBLAS_WORKSPACE_CONFIG
    ":SIZE_KiB:COUNT..." if set, else ":4096:8" (32 MiB) on sm90 and
    ":4096:2:16:8" (8 MiB + 128 KiB) elsewhere."""
    if env:
        total = 0
        parts = [p for p in env.split(":") if p]
        try:
            for size, count in zip(parts[0::2], parts[1::2]):
                total += int(size) * 1024 * int(count)
            return total
        except ValueError:
            pass
    if (major, minor) == (9, 0) or major >= 10:
        return 4096 * 1024 * 8
    return 4096 * 1024 * 2 + 16 * 1024 * 8

# What torch.version.cuda and torch.backends.cudnn.version() answer under
# --fake: a CUDA 12.8 build with cuDNN 9.10 (PyTorch's CUDA 12.8 wheels);
# a library only checks that they are set, or compares a minimum.
CUDA_VERSION = "12.8"
CUDNN_VERSION = 91002
