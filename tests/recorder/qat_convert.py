"""FX quantization-aware training on the GPU, then the model moved to the
CPU and converted (convert_fx quantizes its weights with
torch.quantize_per_channel): a weight over 1 MiB copied to the host stays
a fake tensor (host:large-stays-fake), and its quantization stopped the
recording; now run on its host values, as the real run does on the CPU."""
import warnings

import torch
from torch.ao.quantization import get_default_qat_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_qat_fx

warnings.filterwarnings("ignore")
model = torch.nn.Sequential(torch.nn.Linear(1024, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10))
example = (torch.randn(4, 1024),)
qat = prepare_qat_fx(model.train(), get_default_qat_qconfig_mapping("x86"),
                     example).cuda()
opt = torch.optim.SGD(qat.parameters(), lr=0.1)
for _ in range(2):
    loss = qat(torch.randn(8, 1024, device="cuda")).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
q = convert_fx(qat.cpu().eval())
out = q(torch.randn(3, 1024))
print("converted", tuple(out.shape), out.dtype)
w = q.get_submodule("0").weight()
print("weight", w.dtype, w.is_quantized, tuple(w.shape))
