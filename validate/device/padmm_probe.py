"""What Inductor's pad_mm pass decides on this GPU for a few matmul
shapes (memsim record's PadBench assumes is_mm_compute_bound is True on
every GPU): the device's name and datasheet entry, the TFLOPS and DRAM
bandwidth Inductor estimates, and is_mm_compute_bound of each shape.
  python3 padmm_probe.py"""
import torch
from torch._inductor import utils
from torch._inductor.analysis import device_info
from torch._inductor.fx_passes import pad_mm

print("device", torch.cuda.get_device_name(), torch.__version__)
print("datasheet", device_info.lookup_device_info(torch.cuda.get_device_name()))
print("fp32_precision", torch.backends.cuda.matmul.fp32_precision)
for dt in (torch.float32, torch.bfloat16, torch.float16):
    try:
        print("tflops", dt, utils.get_device_tflops(dt))
    except Exception as e:
        print("tflops", dt, "error", e)
print("dram_gbps", utils.get_gpu_dram_gbps())
for m, k, n in ((4096, 256, 50257), (4096, 768, 50257), (8192, 512, 50257),
                (4096, 50257, 256), (1024, 1024, 1000)):
    for dt in (torch.float32, torch.bfloat16):
        print("compute_bound", m, k, n, dt,
              pad_mm.is_mm_compute_bound(m, k, n, dt))
