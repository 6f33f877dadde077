#!/bin/sh
# memsim record --fake --values cpu: a BatchNorm in evaluation mode inside
# a model that trains (RAFT's freeze_bn, a fine-tune with frozen
# statistics).  On CUDA, native_batch_norm in evaluation returns
# save_mean and save_invstd of C elements (batch_norm_cuda_out copies
# running_mean and writes 1 / sqrt(running_var + eps)); the CPU's
# returns them empty, so their shadows were not kept, the backward
# (native_batch_norm_backward, which reads only the running statistics
# in evaluation) had inputs of unknown values, and every gradient below
# the BatchNorm, then the weights after the step, were assumptions
# (item:float), with no values:unknown to say why.  They are now made
# as CUDA makes them (values.py, _bn_native).  The printed gradients and
# weights must equal a plain CPU run's, with no assumption.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import os, torch
dev = os.environ.get("DEV", "cuda")
torch.manual_seed(0)
conv = torch.nn.Conv2d(3, 4, 3, padding=1)
bn = torch.nn.BatchNorm2d(4)
head = torch.nn.Conv2d(4, 2, 1)
with torch.no_grad():
    bn.running_mean.copy_(torch.arange(4.) / 10)
    bn.running_var.copy_(torch.arange(1., 5.))
m = torch.nn.Sequential(conv, bn, head).to(dev)
bn.eval()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.arange(384.).reshape(2, 3, 8, 8).div(384).to(dev)
for i in range(2):
    opt.zero_grad()
    loss = m(x).pow(2).mean()
    loss.backward()
    print(i, round(loss.item(), 5), round(conv.weight.grad.abs().sum().item(), 5),
          round(bn.weight.grad.sum().item(), 5))
    opt.step()
print("w", round(conv.weight.sum().item(), 5))
PY
same_as_cpu a.py
finish recorder_bn_eval_values.sh
