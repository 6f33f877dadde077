# cuDNN RNNs under memsim record --fake on the H200
# (tests/recorder_rnn.sh).  CASE: lstm (2 layers, batch_first, dropout,
# fp32, one training step), gru_amp (the same shapes as a GRU under fp16
# autocast), bf16 (an LSTM in bf16: weights cuDNN does not flatten).
import sys
import torch

case = sys.argv[1]
dev = "cuda"
B, T, I, H = 4, 8, 16, 32
if case == "bf16":
    m = torch.nn.LSTM(I, H, 1).to(dev, torch.bfloat16)
    x = torch.randn(T, B, I, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        m(x)
    sys.exit(0)
cell = torch.nn.LSTM if case == "lstm" else torch.nn.GRU
m = cell(I, H, 2, batch_first=True, dropout=0.5).to(dev)
x = torch.randn(B, T, I, device=dev)
with torch.autocast("cuda", dtype=torch.float16, enabled=case == "gru_amp"):
    y = m(x)[0]
y.float().sum().backward()
