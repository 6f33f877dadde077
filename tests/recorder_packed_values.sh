#!/bin/sh
# memsim record --fake --values cpu: the values of pack_padded_sequence
# of a CUDA batch, batch-first and time-major, and of its backward.  The
# recorder packs with ATen's own algorithm on the fake input
# (Dispatch._pack_padded); the batch-first input's transpose was made
# outside the recording mode, where the values' shadows do not follow a
# view, so the packed data, the loss after it and every gradient had no
# values (the show-attend-tell captioning tutorial: its loss an
# assumption from the first step on).  The printed sums must equal a
# plain CPU run's, with no assumption.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import os, torch
from torch.nn.utils.rnn import pack_padded_sequence
dev = os.environ.get("DEV", "cuda")
for bf in (True, False):
    w = torch.arange(30.).div(10).reshape(3, 5, 2).to(dev)
    if not bf:
        w = w.transpose(0, 1).contiguous()
    w.requires_grad_()
    data, sizes, *_ = pack_padded_sequence(w, [5, 5, 3], batch_first=bf)
    loss = data.pow(2).sum()
    loss.backward()
    print(bf, sizes.tolist(), round(data.sum().item(), 4),
          round(loss.item(), 4), round(w.grad.sum().item(), 4))
PY
same_as_cpu a.py
finish recorder_packed_values.sh
