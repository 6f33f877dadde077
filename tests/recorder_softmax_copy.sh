#!/bin/sh
# memsim record --fake: host_softmax (softmax_cuda_out, log_softmax_cuda_out)
# runs on input_.contiguous(), a copy of a non-contiguous input made after
# the structured kernel's output and freed on return; lucidrains'
# routing-transformer takes cross_entropy of its logits transposed to
# (batch, classes, tokens), and the H200's snapshot has one logits-sized
# copy (4 x 4096 x 256 floats) beside log_softmax's output in every
# forward.  host_softmax_backward (log_softmax_backward_cuda_out) copies
# a non-contiguous grad_ (a sum's expanded gradient) and output_ the same
# way after grad_input.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
import torch.nn.functional as F
logits = torch.randn(4, 512, 256, device="cuda", requires_grad=True)
t = torch.randint(0, 256, (4, 512), device="cuda")
F.cross_entropy(logits.transpose(1, 2), t).backward()
y = torch.randn(8, 16, device="cuda", requires_grad=True)
y.t().log_softmax(0).sum().backward()
torch.softmax(y, 1)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# each allocation's size, "c" after a copy's, "-" for a copy freed
# (copies_seq)
got=$(copies_seq "$tmp/a.csv")
# the logits (2097152), targets (16384); log_softmax's output, then the
# copy of the transposed logits, freed; nll_loss2d's output and total
# weight; backward: the loss's gradient, nll's and log_softmax's grad
# inputs (no copies: both contiguous), the logits' .grad (AccumulateGrad's
# contiguous clone of the transposed gradient); y (512), log_softmax of
# y.t() (512) and its input's copy (512c), the sum (4); backward: the
# sum's gradient, grad_input (512) and the expanded gradient's copy
# (512c), y's .grad; softmax of a contiguous y: its output, no copy.
want="2097152 16384 2097152 2097152c - 4 4 4 2097152 2097152 2097152 512 512 512c - 4 4 512 512c - 512 512"
[ "$got" = "$want" ] || fail "copies: $got"
finish recorder_softmax_copy.sh
