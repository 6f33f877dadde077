#!/bin/sh
# memsim record --fake --values cpu: the values of CTC loss on the GPU
# (F.ctc_loss, nn.CTCLoss) and of its gradient.  dispatch.py's _ctc
# gives _ctc_loss and _ctc_loss_backward the blocks LossCTC.cu's kernels
# allocate (tests/recorder_ctc.sh) but computed no values: every loss
# came out 0.0 (the shadow of an empty tensor) and every gradient not
# finite, so a CTC trainer recorded with --values cpu (the r34d kit's
# Conformer) logged "loss 0.0000 grad norm nan" from its first step and
# its decoding ran on NaN weights.  Now the outputs' values are the CPU
# kernels' on the inputs' (LossCTC.cpp computes the losses, log_alpha
# and the gradient LossCTC.cu does).  The printed losses, gradient sums
# and weights must equal a plain CPU run's, with no assumption: padded
# and concatenated targets, lengths as tensors and as lists, the small
# problem and the large one (the blanks' logsumexp path), zero_infinity
# with a target longer than its input, every reduction.  Under the rules
# the gradient of a small problem had the value -inf everywhere (the
# full_like the GPU fills before its kernels, kept as a known constant):
# torch.isfinite of it was False, with no assumption.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import os, torch
import torch.nn.functional as F
dev = os.environ.get("DEV", "cuda")
torch.manual_seed(0)
# (T, N, C, S): small, and large (2T + 2.4N + 0.2C > 450)
for T, N, C, S in ((30, 3, 6, 8), (240, 4, 40, 30)):
    lin = torch.nn.Linear(5, C).to(dev)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    x = torch.randn(T, N, 5).to(dev)
    il = torch.tensor([T - 2 * i for i in range(N)])
    tl = torch.tensor([S - i for i in range(N)])
    tl[-1] = T       # longer than its input: an infinite loss
    y = torch.randint(1, C, (N, T)).to(dev)
    flat = torch.cat([y[i, :tl[i]] for i in range(N)])
    for step, (tg, lens, red, zi) in enumerate((
            (y, "tensor", "mean", True), (flat, "tensor", "sum", True),
            (y, "list", "none", True), (y, "tensor", "mean", False))):
        opt.zero_grad()
        lp = lin(x).log_softmax(-1)
        a, b = (il, tl) if lens == "tensor" else (il.tolist(), tl.tolist())
        loss = F.ctc_loss(lp, tg, a, b, reduction=red, zero_infinity=zi)
        total = loss.masked_fill(torch.isinf(loss), 0).sum()
        total.backward()
        g = lin.weight.grad
        print(T, step, [round(v, 4) for v in loss.reshape(-1).tolist()],
              round(g.nan_to_num(0, 0, 0).abs().sum().item(), 4),
              torch.isfinite(g).all().item())
        if zi:      # (not on the NaN gradient of an infinite loss)
            opt.step()
    print(T, "weights", round(lin.weight.nan_to_num(0, 0, 0).sum().item(), 4))
PY
same_as_cpu a.py
# the rules: a small problem's gradient is not the -inf of its full_like
cat >"$tmp/b.py" <<'PY'
import torch
lp = torch.randn(20, 2, 5).log_softmax(-1).cuda().requires_grad_()
y = torch.randint(1, 5, (2, 6)).cuda()
torch.nn.CTCLoss()(lp, y, torch.tensor([20, 18]), torch.tensor([6, 5])).backward()
print("grad finite", torch.isfinite(lp.grad).all().item())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/b.csv" -- "$PY" b.py) \
	>"$tmp/out" 2>&1 || fail "rules: $(tail -3 "$tmp/out")"
grep -qx "grad finite True" "$tmp/out" || fail "rules: $(head -3 "$tmp/out")"
finish recorder_ctc_values.sh
