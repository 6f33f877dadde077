#!/bin/sh
# memsim record --fake --values cpu: the values of a cuDNN RNN (rnn.py),
# forward and backward, computed on the CPU by torch._VF's own functions
# from the shadows of the input, hx, cx and the weights (their values
# kept through flatten_parameters' flat buffer; set_ writes no element:
# values.py).  The RNN's fake outputs were torch.empty, which --values
# cpu computes as zeros: an nn.GRU's output, its loss and the weights'
# gradients were silently 0 (Time-Series-Library's SegRNN: its loss
# after the first step an assumption).  The script's printed losses and
# weights must equal a plain CPU run's; an RNN with dropout between
# layers (the GPU's draws) gets no values: assumptions, not zeros.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import os, torch
dev = os.environ.get("DEV", "cuda")
torch.manual_seed(0)
for kind in ("GRU", "LSTM", "RNN"):
    m = getattr(torch.nn, kind)(3, 4, num_layers=2, batch_first=True).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    x = torch.arange(30.).reshape(2, 5, 3).div(30).to(dev)
    for i in range(2):
        opt.zero_grad()
        y, h = m(x)
        loss = y.pow(2).mean() + (h[0] if kind == "LSTM" else h).sum()
        loss.backward()
        opt.step()
        print(kind, i, round(loss.item(), 5), round(m.weight_hh_l0.sum().item(), 5))
PY
cat >"$tmp/b.py" <<'PY'
import torch
m = torch.nn.GRU(3, 4, num_layers=2, dropout=0.5, batch_first=True).cuda()
y, h = m(torch.ones(2, 5, 3, device="cuda"))
print("drop", y.sum().item())
PY
same_as_cpu a.py
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/b.csv" -- "$PY" b.py) \
	>"$tmp/out" 2>&1 || fail "record dropout: $(tail -3 "$tmp/out")"
grep -q "^drop 0.0$" "$tmp/out" && fail "dropout: zeros: $(cat "$tmp/out")"
grep -q "; 1 assumption (item:float 1)$" "$tmp/out" || fail "dropout assumptions: $(tail -1 "$tmp/out")"
finish recorder_rnn_values.sh
