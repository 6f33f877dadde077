# A custom operator whose backward reads its offsets on the host
# (.tolist(), as transformers' grouped_mm_fallback did): AOTAutograd's
# fake tensors raise DataDependentOutputException when they trace the
# joint graph.  Dynamo makes that a graph break: the frame runs eagerly
# and the frames it calls are compiled one by one.  "outer" compiles the
# module; "inner" compiles only the function it calls, which is what the
# graph break leaves: both allocate the same.
import sys
import torch

@torch.library.custom_op("memsim_test::segsum", mutates_args=())
def segsum(x: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    return x * 2

@segsum.register_fake
def _(x, offs):
    return torch.empty_like(x)

def setup(ctx, inputs, output):
    ctx.offs = inputs[1]

def backward(ctx, g):
    start = 0
    for end in ctx.offs.tolist():
        start = end
    return g * 2, None

segsum.register_autograd(backward, setup_context=setup)

def act(x):
    return torch.sin(x) * torch.cos(x) * torch.tanh(x) + x.exp()

class M(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.lin = torch.nn.Linear(512, 512, device="cuda")
        self.f = f

    def forward(self, x, offs):
        return segsum(self.f(self.lin(x)), offs).sum()

mode = sys.argv[1]
m = M(torch.compile(act) if mode == "inner" else act)
if mode == "outer":
    m = torch.compile(m)
x = torch.randn(1024, 512, device="cuda")
offs = torch.tensor([256, 512, 1024], device="cuda")
for _ in range(2):
    m(x, offs).backward()
print(mode, "ok")
