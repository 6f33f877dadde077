"""The devices --device names: what torch.cuda answers under --fake.

total_memory is what torch.cuda.get_device_properties(0).total_memory
reports (cudaDeviceProp::totalGlobalMem); the H200 figure was read on the
project's device (see docs/guide.md, where cudaMemGetInfo's total on
the H200 is given).
"""

DEVICES = {
    # name: (marketing name, major, minor, total_memory bytes, SMs)
    "h200": ("NVIDIA H200", 9, 0, 150109880320, 132),
    "h100-80gb": ("NVIDIA H100 80GB HBM3", 9, 0, 85031714816, 132),
    "h100-pcie": ("NVIDIA H100 PCIe", 9, 0, 85031714816, 114),
    "a100-80gb": ("NVIDIA A100-SXM4-80GB", 8, 0, 85097971712, 108),
    "a100-40gb": ("NVIDIA A100-SXM4-40GB", 8, 0, 42297270272, 108),
    "l4": ("NVIDIA L4", 8, 9, 23580639232, 58),
    "l40s": ("NVIDIA L40S", 8, 9, 47697362944, 142),
    "a10g": ("NVIDIA A10G", 8, 6, 23609475072, 80),
    "v100-32gb": ("Tesla V100-SXM2-32GB", 7, 0, 34089730048, 80),
    "t4": ("Tesla T4", 7, 5, 15835660288, 40),
}


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
