#!/bin/sh
# memsim record --fake --values cpu: the values of nn.LSTMCell and
# nn.GRUCell on a CUDA input, forward and backward.  On CUDA their gate
# GEMMs are followed by _thnn_fused_lstm_cell / _thnn_fused_gru_cell
# and their backwards (_thnn_fused_lstm_cell_backward_impl,
# _thnn_fused_gru_cell_backward), CUDA kernels with no CPU kernel: the
# values were lost ("values:unknown", the show-attend-tell captioning
# tutorial's decoder), the loss and every gradient after them an
# assumption.  They are computed as RNN.cu's lstm_cell_forward /
# lstm_cell_backward and gru_cell_forward / gru_cell_backward compute
# them (values.py).  The printed losses, gradients and weights must
# equal a plain CPU run's (CPU's cells: the same formulas, in another
# order: within 1e-5 of them, relatively, as floats round), with no
# assumption.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import os, torch
dev = os.environ.get("DEV", "cuda")
torch.manual_seed(0)
for kind, bias in (("LSTMCell", True), ("LSTMCell", False),
                   ("GRUCell", True), ("GRUCell", False)):
    m = getattr(torch.nn, kind)(3, 4, bias=bias).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    x = torch.arange(30.).reshape(10, 3).div(30).to(dev)
    for i in range(2):
        opt.zero_grad()
        h = c = None
        loss = 0
        for t in range(3):
            xt = x[t * 3:t * 3 + 3]
            if kind == "LSTMCell":
                h, c = m(xt) if h is None else m(xt, (h, c))
                # grad_cy as well as grad_hy reaches the last step
                loss = loss + h.pow(2).sum() + 0.5 * c.sum()
            else:
                h = m(xt) if h is None else m(xt, h)
                loss = loss + h.pow(2).sum()
        loss.backward()
        g = m.weight_hh.grad.abs().sum().item()
        opt.step()
        print(kind, bias, i, round(loss.item(), 5), round(g, 5),
              round(m.weight_ih.sum().item(), 5))
PY
same_as_cpu a.py 1e-5
finish recorder_cell_values.sh
