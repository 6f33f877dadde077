"""A CPU tensor among a GPU op's arguments (tests/recorder_same_device.sh):
what each call does on the GPU, printed a line each.  A 0-dim CPU tensor
is a scalar to the TensorIterator ops (add, where, masked_fill, maximum,
index with CPU indices: `device_check: NoCheck` in native_functions.yaml)
and an error to every other CUDA kernel (clamp with tensor bounds, as
Swin Transformer V2's logit scale; nll_loss's target; index_select's
index), which names the argument and the generated wrapper."""
import torch
import torch.nn.functional as F

x = torch.randn(4, 10, device="cuda", requires_grad=True)
cpu0 = torch.tensor(2.0)
calls = [
    ("add", lambda: x + cpu0),
    ("where", lambda: torch.where(x > 0, x, cpu0)),
    ("masked_fill", lambda: x.masked_fill(x > 0, cpu0)),
    ("maximum", lambda: torch.maximum(x, cpu0)),
    ("index", lambda: x[torch.tensor([0, 2])]),
    ("clamp", lambda: torch.clamp(x, max=torch.log(torch.tensor(100.0)))),
    ("clamp_min", lambda: torch.clamp(x, min=cpu0, max=None)),
    ("cross_entropy", lambda: F.cross_entropy(x, torch.tensor([0, 1, 2, 3]))),
    ("index_select", lambda: torch.index_select(x, 0, torch.tensor([1]))),
]
for name, fn in calls:
    try:
        y = fn()
        print(name, "ok", tuple(y.shape), y.device)
    except RuntimeError as e:
        print(name, "error:", str(e).splitlines()[0])
