"""empty_cache rows on the GPU (memsim record --gpu; tests/data/empty_cache): a block
pending on a side stream's use when empty_cache() runs (its free completes
in the call's synchronize_and_free_events), a call that frees nothing, a
call after a free, torch.cuda.memory.empty_cache, and a torch.cuda.graph
capture (whose __enter__ calls empty_cache()).  Prints the run's counters."""
import torch

M = 1 << 20
s = torch.cuda.Stream()
a = torch.empty(12 * M, dtype=torch.uint8, device="cuda")
b = torch.empty(12 * M, dtype=torch.uint8, device="cuda")
small = torch.empty(1000, dtype=torch.uint8, device="cuda")
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    a.add_(1)
a.record_stream(s)
del a, b
torch.cuda.empty_cache()
c = torch.empty(12 * M, dtype=torch.uint8, device="cuda")
torch.cuda.empty_cache()
del c
torch.cuda.memory.empty_cache()
d = torch.empty(30 * M, dtype=torch.uint8, device="cuda")
x = torch.ones(256, 256, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2
g.replay()
torch.cuda.synchronize()
del d, small
torch.cuda.empty_cache()
st = torch.cuda.memory_stats()
print("probe", torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(),
      *[st.get(k) for k in ("segment.all.allocated", "segment.all.freed",
                            "num_sync_all_streams", "num_device_alloc",
                            "num_device_free")])
