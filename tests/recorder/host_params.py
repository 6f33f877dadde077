"""A model trained on the GPU, then moved to the host: model.cpu() (as
torch.ao's eager QAT does before convert) leaves plain CPU Parameters
and buffers, the same objects, so CPU-only ops run on them, its
state_dict is real, and the optimizer made before the move steps them
again after .cuda().
    python host_params.py DEVICE      (cuda, or cpu for the real run)"""
import io
import sys
import warnings
import torch
import torch.nn as nn
import torch.ao.quantization as tq

warnings.filterwarnings("ignore")
dev = sys.argv[1] if len(sys.argv) > 1 else "cuda"
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU()).to(dev)
opt = torch.optim.Adam(m.parameters())
x = torch.randn(16, 64, device=dev)
m(x).square().mean().backward()
opt.step()
w = m[0].weight
before = torch.cuda.memory_allocated()
m.cpu()
if dev == "cuda":
    print("mem freed by cpu()", before - torch.cuda.memory_allocated())
print("same object", m[0].weight is w, type(w).__name__, w.device,
      type(w.grad).__name__, w.grad.device,
      type(m[1].running_mean).__name__, m[1].running_mean.device)
q = torch.quantize_per_tensor(w.detach(), 0.1, 0, torch.qint8)
print("quantized", q.dtype, tuple(q.int_repr().shape))
print("numpy", w.detach().numpy().dtype, w.detach().numpy().shape)
sd = m.state_dict()
print("state_dict", sorted({type(v).__name__ + " " + str(v.device)
                            for v in sd.values()}))
buf = io.BytesIO()
torch.save(sd, buf)
buf.seek(0)
back = torch.load(buf)
print("saved and loaded", all(torch.equal(back[k], v) for k, v in sd.items()))
with torch.no_grad():
    y = m(torch.randn(4, 64))
print("host forward", type(y).__name__, y.device, tuple(y.shape))
m.to(dev)
print("back", m[0].weight is w, w.device.type == dev,
      w.grad.device.type == dev)
m(x).square().mean().backward()
opt.step()
print("stepped", len(opt.state),
      opt.state[w]["exp_avg"].device.type == dev)


# torch.ao eager QAT: fuse, prepare_qat, a step on the device, then
# convert on the host (kd-qat)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(8, 4)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.relu(self.bn(self.conv(self.quant(x))))
        return self.dequant(self.fc(x.mean((2, 3))))


net = tq.fuse_modules_qat(Net().train(), [["conv", "bn", "relu"]])
net.qconfig = tq.get_default_qat_qconfig("x86")
tq.prepare_qat(net, inplace=True)
net.to(dev)
sgd = torch.optim.SGD(net.parameters(), lr=0.1)
net(torch.randn(4, 3, 8, 8, device=dev)).square().mean().backward()
sgd.step()
qnet = tq.convert(net.cpu().eval())
print("converted", type(qnet.conv).__name__, qnet.conv.weight().dtype,
      type(qnet.fc).__name__, qnet.fc.weight().dtype)
out = qnet(torch.randn(2, 3, 8, 8))
print("quantized forward", out.dtype, tuple(out.shape))
