# An error raised inside the autograd engine's worker thread (a tensor
# hook's shape error on the GPU): the recorder ended with std::terminate
# (signal 6) or "returned NULL without setting an exception".  A script
# that catches it goes on; one that does not fails with its own
# traceback, as on the GPU (PyTorch 2.11 on the H200 prints what this
# does, its error's message aside).
import sys
import torch

x = torch.randn(4, 4, device="cuda", requires_grad=True)


def bad(g):
    return g + torch.ones(3, device="cuda")   # a shape error, in backward


for _ in range(3):
    y = x * 2
    y.register_hook(bad)
    try:
        y.sum().backward()
    except RuntimeError as e:
        print("caught", type(e).__name__)
(x * 3).sum().backward()
print("grad", x.grad.tolist()[0][0] == 3.0)
if sys.argv[1:] == ["uncaught"]:
    y = x * 2
    y.register_hook(bad)
    y.sum().backward()
