# tests/recorder_compile_optim.sh: a compiled optimizer step (as PyTorch's
# recipe compiling_optimizer.py): Adam over four 256 x 256 weights.
import torch
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256, False, device="cuda") for _ in range(4)])
model(torch.rand(256, device="cuda")).sum().backward()
opt = torch.optim.Adam(model.parameters(), lr=0.01)

@torch.compile()
def fn():
    opt.step()

for _ in range(3):
    fn()
print("state", sorted(opt.state[model[0].weight].keys()), opt.state[model[0].weight]["exp_avg"].shape)
print("allocated", torch.cuda.memory_allocated())
