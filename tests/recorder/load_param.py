# A whole model pickled (yolov7's checkpoints: {'model': Model}), loaded
# onto the GPU: its nn.Parameters are made by torch._utils'
# _rebuild_parameter.  Their values, as the plain tensors', count.
import sys

import torch
import torch.nn as nn

if sys.argv[1] == "save":
    torch.manual_seed(0)
    m = nn.Linear(64, 64).half()
    with torch.no_grad():
        m.weight[:, :48] = 0
    for p in m.parameters():
        p.requires_grad = False
    torch.save({"model": m, "t": torch.ones(8)}, sys.argv[2])
else:
    ck = torch.load(sys.argv[2], map_location="cuda", weights_only=False)
    w = ck["model"].weight
    n = int((w != 0).sum())
    print(isinstance(w, nn.Parameter), n, int((ck["t"] != 0).sum()))
    print(w[w != 0].shape[0])
