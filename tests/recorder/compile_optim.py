# tests/recorder_compile_optim.sh: a compiled optimizer step (as PyTorch's
# recipes compiling_optimizer.py, compiling_optimizer_lr_scheduler.py):
# Adam over four 256 x 256 weights.
import sys
import torch
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256, False, device="cuda") for _ in range(4)])
model(torch.rand(256, device="cuda")).sum().backward()
tensor_lr = sys.argv[1:] == ["tensorlr"]
opt = torch.optim.Adam(model.parameters(),
                       lr=torch.tensor(0.01) if tensor_lr else 0.01)
sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5) \
    if tensor_lr else None

@torch.compile()
def fn():
    opt.step()
    if sched:
        # a CPU tensor lr changed in place: one graph for every step
        sched.step()

for _ in range(3):
    fn()
if tensor_lr:
    # one compiled frame of Adam.step serves the three steps
    import inspect
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    code = inspect.unwrap(type(opt).step).__code__
    print("step frames", len(_debug_get_cache_entry_list(code)))
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
