# tests/recorder_programs.sh: memsim record --fake, a model moved after its
# optimizer was made (Fabric's setup; module.to after the optimizer):
# Module._apply keeps the parameters, their .data swapped.
import torch
m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
m.cuda()
loss = m(torch.randn(8, 64, device="cuda")).sum()
loss.backward()
print("grads", sum(p.grad is not None for g in opt.param_groups
                   for p in g["params"]))
print("ln", m[1].weight[0].item(), m[1].weight.device)
torch.nn.utils.clip_grad_value_(m.parameters(), 0.25)
opt.step()
opt.zero_grad()
m.half()                    # the fp32 parameters go, the fp16 ones come
print("dtypes", " ".join(str(p.dtype) for g in opt.param_groups
                         for p in g["params"]))
