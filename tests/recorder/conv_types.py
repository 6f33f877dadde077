"""A convolution's input, weight and bias on two devices or of two dtypes:
_convolution refuses them on the GPU (check_input_same_type_as_parameters),
as in Lightning's PixelCNN tutorial, whose module the strategy's teardown
had moved back to the CPU before sampling on a CUDA input."""
import torch

x = torch.zeros(2, 4, 8, 8, device="cuda")
w = torch.ones(4, 4, 3, 3, device="cuda")
cases = [
    ("cpu weight", lambda: torch.nn.Conv2d(4, 4, 3)(x)),
    ("cpu bias", lambda: torch.nn.functional.conv2d(x, w, torch.ones(4))),
    ("cpu depthwise", lambda: torch.nn.Conv2d(4, 4, 3, groups=4)(x)),
    ("cpu transposed", lambda: torch.nn.ConvTranspose2d(4, 4, 3)(x)),
    ("cpu conv1d", lambda: torch.nn.Conv1d(4, 4, 3)(x[:, :, 0])),
    ("cpu input", lambda: torch.nn.functional.conv2d(x.cpu(), w)),
    ("half input", lambda: torch.nn.functional.conv2d(x.half(), w)),
    ("empty batch", lambda: torch.nn.Conv2d(4, 4, 3)(x[:0])),
    ("same", lambda: torch.nn.functional.conv2d(x, w)),
]
for name, f in cases:
    try:
        y = f()
        print(name, "ok", y.device.type, tuple(y.shape))
    except RuntimeError as e:
        print(name, "error", str(e).splitlines()[0])
