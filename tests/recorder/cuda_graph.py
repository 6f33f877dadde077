# tests/recorder_cudagraph.sh: a CUDA graph captured by hand (PyTorch's
# "CUDA Graphs" recipe: warm-up on a side stream, torch.cuda.graph, replay),
# and a second graph sharing the first one's pool.
import torch
import torch.nn as nn
m = nn.Linear(256, 256).cuda()
x = torch.randn(64, 256, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(2):
        m(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = m(x)
for _ in range(3):
    g.replay()
g2 = torch.cuda.CUDAGraph()
with torch.cuda.graph(g2, pool=g.pool()):
    z = m(y)
g2.replay()
print("graphs", tuple(y.shape), tuple(z.shape), g.pool() == g2.pool())
