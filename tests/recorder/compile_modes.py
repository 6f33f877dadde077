# A compiled GELU (64 x 256, several configurations) run under no_grad
# (an inference graph) and then with grad (a training forward and its
# backward), as an evaluation before training does (nanoGPT's
# estimate_loss at step 0).  Prints "ok".
import torch

dev = "cuda"
f = torch.compile(lambda x: torch.nn.functional.gelu(x) * 2)
x = torch.randn(64, 256, device=dev, requires_grad=True)
with torch.no_grad():
    f(x)
f(x).sum().backward()
print("ok")
