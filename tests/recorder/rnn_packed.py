"""A packed sequence into a 2-layer bidirectional nn.LSTM or nn.GRU
(tests/recorder_rnn_packed.sh): B=4 sequences of lengths 8, 5, 3, 1
(pack_padded_sequence, unsorted), I=16, H=32, then pad_packed_sequence
and a backward.  Its inputs are made on the host, so that a CPU run
(MODE cpu) draws the same values.
    python3 rnn_packed.py lstm|gru [cpu]"""
import sys
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(0)
mode = sys.argv[1]
dev = sys.argv[2] if len(sys.argv) > 2 else "cuda"
T, B, I, H = 8, 4, 16, 32
cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[mode]
m = cls(I, H, 2, batch_first=True, bidirectional=True).to(dev)
x = torch.randn(B, T, I).to(dev)
lengths = torch.tensor([8, 5, 3, 1])
p = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
out, h = m(p)
y, n = pad_packed_sequence(out, batch_first=True)
loss = y.float().pow(2).sum()
loss.backward()
print("out", tuple(y.shape), "%.5f" % loss.item(), n.tolist())
print("grad", "%.5f" % m.weight_ih_l0.grad.abs().sum().item())
