# N identical layers (LayerNorm, Linear, GELU), compiled, one training
# step, then the same for a second model of the same shapes, compiled on
# its own (tests/recorder_compile_layers.sh):
#   python3 compile_layers.py LAYERS [twice]
import sys
import torch
import torch.nn as nn

n = int(sys.argv[1])


def model():
    layers = []
    for _ in range(n):
        layers += [nn.LayerNorm(256), nn.Linear(256, 256), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(256, 16)).cuda()


for _ in range(2 if sys.argv[2:] == ["twice"] else 1):
    m = torch.compile(model())
    x = torch.randn(64, 256, device="cuda")
    for step in range(2):
        m(x).square().mean().backward()
print("done")
