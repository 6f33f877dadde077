"""pack_padded_sequence of a batch on the GPU (lengths on the host), an
LSTM over it, pad_packed_sequence back, sorted and not: what the H200
prints (PyTorch 2.11).  The memory lines are the packing's own: the
allocated bytes it leaves (the packed data; the sorted input and its
indices when enforce_sorted=False) and its peak above the start (ATen's
_pack_padded_sequence copies each run of time steps over a partial batch
before concatenating them)."""
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

lstm = torch.nn.LSTM(64, 128, batch_first=True).cuda()
x = torch.randn(4, 100, 64, device="cuda", requires_grad=True)
for enforce, lens in ((True, [100, 70, 70, 30]), (False, [30, 100, 5, 70])):
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    p = pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=enforce)
    print("pack", enforce, torch.cuda.memory_allocated() - base,
          torch.cuda.max_memory_allocated() - base)
    print("packed", tuple(p.data.shape), p.batch_sizes.device.type,
          p.batch_sizes[::10].tolist())
    out, _ = lstm(p)
    y, ylens = pad_packed_sequence(out, batch_first=True)
    print("padded", tuple(y.shape), ylens.tolist())
    y.sum().backward()
    del p, out, y
print("grad", tuple(x.grad.shape))
