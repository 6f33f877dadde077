# torch.compile with PyTorch's AOTAutograd debugging backends (aot_eager:
# min_cut_rematerialization_partition; aot_eager_default_partitioner),
# or eager: a linear layer, then pointwise ops whose saved activations the
# min-cut partitioner recomputes in the backward instead.
import sys, torch
def act(x):
    return torch.sin(x) * torch.cos(x) * torch.tanh(x) + x.exp()
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(512, 512, device="cuda")
    def forward(self, x):
        return act(self.lin(x)).sum()
m = M()
if sys.argv[1] != "eager":
    m = torch.compile(m, backend=sys.argv[1])
x = torch.randn(1024, 512, device="cuda")
for _ in range(2):
    m(x).backward()
print(sys.argv[1], "ok", torch.cuda.max_memory_allocated())
