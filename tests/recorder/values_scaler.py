# tests/recorder_values.sh: GradScaler's scale under --fake
import torch
torch.manual_seed(0)    # (--values cpu: the weights' values decide found_inf)
m = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda", growth_interval=2)
for step in range(3):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = m(0.1 * torch.randn(4, 8, device="cuda")).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    print("scale", scaler.get_scale())
