# Tensor parallelism as PyTorch's tensor_parallel_example.py sets it up:
# init_device_mesh before any init_process_group (the mesh starts the
# default group itself), a column-wise then a row-wise Linear.
import os
import torch
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

mesh = init_device_mesh("cuda", (int(os.environ["WORLD_SIZE"]),))
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()
model = parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
model(torch.randn(8, 1024, device="cuda")).sum().backward()
print("mesh", mesh.size(), model[0].weight.to_local().shape)
