# Kernels' temporaries that generation and inference code meets, under
# memsim record --fake; tests/recorder_generate.sh checks the exact bytes.
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(4, 16000, device="cuda")
v, i = torch.sort(x)                # 4 slices of 16000 keys: cub
p = torch.softmax(x, -1)
s = torch.multinomial(p, 1)         # one sample: the fast path
small = torch.randn(8, 4096, device="cuda")
torch.sort(small)                   # 4096 keys a slice: in place
with torch.inference_mode():
    lin = nn.Linear(64, 64).cuda()
    lin(torch.randn(2, 64, device="cuda"))      # addmm: cuBLASLt
    conv = nn.Conv2d(64, 4, 3, padding=1).cuda().half()
    conv(torch.randn(2, 64, 16, 16, device="cuda", dtype=torch.half))
    up = nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1).cuda().half()
    up(torch.randn(2, 16, 8, 8, device="cuda", dtype=torch.half))
