"""torch.logsumexp on the GPU: the allocated bytes it leaves and its peak
above the start, for a few shapes and dims (what the H200 prints)."""
import torch
for shape, dims, keep in (((16, 300, 61), 2, True), ((16, 300, 61), -1, False),
                          ((8, 1024, 32000), -1, False), ((4096, 64), (0, 1), False),
                          ((64, 128, 128), 1, True), ((3, 50000), 0, False)):
    x = torch.randn(*shape, device="cuda")
    torch.cuda.synchronize()
    b = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y = torch.logsumexp(x, dims, keep)
    print("lse", shape, dims, keep, torch.cuda.memory_allocated() - b,
          torch.cuda.max_memory_allocated() - b, flush=True)
    del x, y
