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


# nvidia-smi as a script sees it under --fake: the stand-in put first on
# its PATH (nvidia_smi_standin).  Its answers are those of the recorded
# device, idle: the table nvidia-smi prints with no arguments, -L
# (--list-gpus), and --query-gpu=FIELD,... --format=csv[,noheader]
# [,nounits] for the fields below; anything else prints the table.
_SMI = r'''import sys
NAME, MIB, COUNT, MAJOR, MINOR = %r, %d, %d, %d, %d
UUID = "GPU-00000000-0000-0000-0000-00000000000%%d"
FIELDS = {
    "name": (None, lambda i: NAME), "gpu_name": (None, lambda i: NAME),
    "index": (None, lambda i: str(i)), "count": (None, lambda i: str(COUNT)),
    "uuid": (None, lambda i: UUID %% i), "gpu_uuid": (None, lambda i: UUID %% i),
    "memory.total": ("MiB", lambda i: str(MIB)),
    "memory.used": ("MiB", lambda i: "0"), "memory.free": ("MiB", lambda i: str(MIB)),
    "memory.reserved": ("MiB", lambda i: "0"),
    "utilization.gpu": ("%%", lambda i: "0"), "utilization.memory": ("%%", lambda i: "0"),
    "compute_cap": (None, lambda i: "%%d.%%d" %% (MAJOR, MINOR)),
    "pci.bus_id": (None, lambda i: "00000000:%%02X:00.0" %% (i + 1)),
}
args = sys.argv[1:]
query = fmt = None
for j, a in enumerate(args):
    if a.startswith("--query-gpu="):
        query = a.split("=", 1)[1]
    elif a == "--query-gpu" and j + 1 < len(args):
        query = args[j + 1]
    elif a.startswith("--format="):
        fmt = a.split("=", 1)[1]
    elif a == "--format" and j + 1 < len(args):
        fmt = args[j + 1]
if "-L" in args or "--list-gpus" in args:
    for i in range(COUNT):
        print("GPU %%d: %%s (UUID: %%s)" %% (i, NAME, UUID %% i))
elif query is not None:
    names = [f.strip() for f in query.split(",") if f.strip()]
    bad = [f for f in names if f not in FIELDS]
    if bad:
        print('Field "%%s" is not a valid field to query.' %% bad[0])
        sys.exit(2)
    opts = (fmt or "csv").split(",")
    units = "nounits" not in opts
    if "noheader" not in opts:
        print(", ".join(f + (" [%%s]" %% FIELDS[f][0] if FIELDS[f][0] else "")
                        for f in names))
    for i in range(COUNT):
        print(", ".join(FIELDS[f][1](i) + (" " + FIELDS[f][0]
                                           if units and FIELDS[f][0] else "")
                        for f in names))
else:
    print("+" + "-" * 89 + "+")
    print("| NVIDIA-SMI (memsim record --fake: the recorded device, idle)" + " " * 28 + "|")
    print("|" + "=" * 89 + "|")
    for i in range(COUNT):
        print("| %%3d  %%-30s | %%20s | %%29s |" %% (
            i, NAME, "", "0MiB / %%dMiB" %% MIB))
    print("+" + "-" * 89 + "+")
    print("| Processes:" + " " * 78 + "|")
    print("|  No running processes found" + " " * 61 + "|")
    print("+" + "-" * 89 + "+")
'''


def nvidia_smi_standin(name, count, python):
    """Put an `nvidia-smi` first on PATH that answers for COUNT of device
    NAME (a --device), run by PYTHON, in a folder of its own (in
    STANDINS, which the recorder's main removes at its end).  The
    recording pretends a GPU, so a script that
    runs nvidia-smi to log the machine (modded-nanogpt's records:
    subprocess.run(['nvidia-smi'], ...) after init_process_group) finds
    one, whether or not the recording machine has a driver, and it
    describes the recorded device, not the machine's."""
    import tempfile
    label, major, minor, total = DEVICES[name][:4]
    d = tempfile.mkdtemp(prefix="memsim-smi-")
    path = os.path.join(d, "nvidia-smi")
    with open(path, "w") as f:
        f.write("#!%s\n" % python)
        f.write(_SMI % (label, total // (1 << 20), max(1, count), major,
                        minor))
    os.chmod(path, 0o755)
    os.environ["PATH"] = d + os.pathsep + os.environ.get("PATH", "")
    STANDINS.append(d)


STANDINS = []
