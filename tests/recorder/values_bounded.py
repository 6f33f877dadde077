# CleanRL's SAC actor: a log-std squashed by tanh into [LOG_STD_MIN,
# LOG_STD_MAX], exponentiated, is the scale of a Normal, whose argument
# check (scale > 0, then .all()) the rules answer from ranges: tanh's
# [-1, 1], shifted and scaled, exp's [e^-5, e^2].  (It was answered by
# --item-bool, false: "Expected parameter scale ... to satisfy the
# constraint GreaterThan(lower_bound=0.0)".)
import torch
import torch.nn as nn

LOG_STD_MIN, LOG_STD_MAX = -5, 2
fc = nn.Linear(3, 2).cuda()
x = torch.randn(1, 3, device="cuda")
log_std = torch.tanh(fc(x)[:, 1:])
log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)
normal = torch.distributions.Normal(fc(x)[:, :1], log_std.exp())
a = torch.tanh(normal.rsample()).detach().cpu().numpy()
p = torch.sigmoid(fc(x)).detach().cpu().numpy()
print("action", a.shape, float(a[0, 0]), float(p[0, 0]))
