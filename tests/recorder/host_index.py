# A GPU tensor indexed by a host tensor and a GPU one (CleanRL's C51:
# pmfs[torch.arange(len(x)), action]), then backward: IndexBackward0 puts
# the gradient with the host index, which the real kernels copy to the GPU
# first (the recorder ended with std::terminate, signal 6).
import torch
net = torch.nn.Linear(4, 2 * 51).cuda()
x = torch.randn(128, 4, device="cuda")
action = torch.randint(0, 2, (128,), device="cuda")
pmfs = torch.softmax(net(x).view(len(x), 2, 51), dim=2)
pmfs[torch.arange(len(x)), action].sum().backward()
print("host index", tuple(net.weight.grad.shape))
