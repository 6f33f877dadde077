"""A scripted elementwise function on CUDA tensors called four times
under torch.jit.fuser("fuser1"): the recorder runs it op by op
(tests/recorder_jit_fuser.sh)."""
import torch


@torch.jit.script
def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.exp() + b.sigmoid() * 2).relu()


x = torch.rand(1000, 4, device="cuda")
y = torch.randn(1000, 4, device="cuda")
with torch.jit.fuser("fuser1"):
    for _ in range(4):
        z = f(x, y)
    print("fuse on gpu", torch._C._jit_can_fuse_on_gpu())
print("peak", torch.cuda.max_memory_allocated())
