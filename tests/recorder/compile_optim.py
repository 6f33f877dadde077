# tests/recorder_compile_optim.sh: a compiled optimizer step (as PyTorch's
# recipes compiling_optimizer.py, compiling_optimizer_lr_scheduler.py):
# Adam over four 256 x 256 weights.
import sys
import torch
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256, False, device="cuda") for _ in range(4)])
model(torch.rand(256, device="cuda")).sum().backward()
opt = torch.optim.Adam(model.parameters(), lr=0.01)

@torch.compile()
def fn():
    opt.step()

for _ in range(3):
    fn()
if sys.argv[1:] == ["sched"]:
    # a float lr changed by a scheduler: Dynamo recompiles, and restarts
    # its analysis to specialize the scalar (TensorifyScalarRestartAnalysis)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

    @torch.compile()
    def fn():
        opt.step()
        sched.step()

    for _ in range(4):
        fn()
print("state", sorted(opt.state[model[0].weight].keys()), opt.state[model[0].weight]["exp_avg"].shape)
print("allocated", torch.cuda.memory_allocated())
