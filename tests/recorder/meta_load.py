# accelerate's set_module_tensor_to_device (diffusers' from_pretrained,
# low_cpu_mem_usage): a parameter made on the meta device is replaced by
# type(param)(value, requires_grad=...), the checkpoint's values.
import torch
from accelerate import init_empty_weights
from accelerate.utils import set_module_tensor_to_device

with init_empty_weights():
    m = torch.nn.Linear(1024, 1024)
sd = torch.nn.Linear(1024, 1024).state_dict()
for k, v in sd.items():
    set_module_tensor_to_device(m, k, "cpu", value=v)
print("loaded", m.weight.device, m.weight.requires_grad, tuple(m.weight.shape))
m.cuda()
y = m(torch.randn(8, 1024, device="cuda"))
print("moved", m.weight.device, tuple(y.shape))
