# A compiled MLP (Linear, GELU, Linear) called with inputs of the rows
# given (argv), as a mixture of experts calls each expert with the tokens
# routed to it.  Prints the graphs Dynamo compiled: PyTorch makes a frame
# whose input size changed dynamic (automatic_dynamic_shapes) and
# specializes sizes 0 and 1, so 100 150 200 250 1 0 compile four (100;
# dynamic; 1; 0), as on a CPU without the recorder.
import sys
import torch
from torch._dynamo.utils import counters

dev = "cuda"
mlp = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.GELU(),
                          torch.nn.Linear(512, 128)).to(dev)
f = torch.compile(mlp)
x = torch.randn(512, 128, device=dev)
for n in (int(a) for a in sys.argv[1:]):
    y = f(x[:n].clone())
    assert tuple(y.shape) == (n, 128)
print("graphs", counters["stats"]["unique_graphs"])
