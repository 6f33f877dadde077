# tests/recorder_accelerator.sh: torch.accelerator's memory API on the
# fake GPU, and its synchronize after a torch.compile (torch.utils.
# benchmark's timer calls it).
import torch
A = torch.accelerator
x = torch.ones(1024, device="cuda")
print("acc", A.memory_allocated(), A.max_memory_allocated(), A.memory_reserved() >= 4096)
y = torch.empty(2048, device="cuda")
del y
print("peak", A.max_memory_allocated(), A.max_memory_reserved() >= 12288)
A.reset_peak_memory_stats()
print("reset", A.max_memory_allocated())
A.empty_cache()
free, total = A.get_memory_info()
# cudaMemGetInfo's used bytes: the CUDA context and what is reserved
print("info", total - free > A.memory_reserved() >= 4096,
      A.memory_stats()["allocated_bytes.all.current"])
f = torch.compile(lambda a: a * 2)
f(x)
A.synchronize()
print("synced")
