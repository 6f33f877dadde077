# tests/recorder_values.sh: memsim record --fake, values.py
# Custom operators whose output size depends on values: a fake kernel
# that asks for a data-dependent size (ctx.new_dynamic_size).
import sys
import torch
name = sys.argv[1]
@torch.library.custom_op(name, mutates_args=())
def keep(x: torch.Tensor) -> torch.Tensor:
    return torch.nonzero(x > 0)[:, 0]
@keep.register_fake
def _(x):
    n = torch.library.get_ctx().new_dynamic_size()
    return x.new_empty((n,), dtype=torch.long)
x = torch.randn(200, device="cuda")
y = keep(x)
print("kept", y.shape[0])
