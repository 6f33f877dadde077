#!/bin/sh
# memsim record --fake: --item-repeats counts a line's asks within one
# optimizer step (Optimizer.step's pre- and post-hooks) for the asks made
# in the step: a step that asks once a parameter block ends, so its asks
# do not add up over the steps.  Distributed Shampoo (facebookresearch/
# optimizers, kit r40a) asks `torch.min(L).item()` in
# matrix_inverse_root_from_eigendecomposition (matrix_functions.py:241)
# once a block at each preconditioner update (about 390 a step for the
# CIFAR-10 example's ConvNet at --max-preconditioner-dim 256), and its
# coupled Newton root asks `while error > tolerance` once a block: the
# guard (100000 asks of one line) stopped such a run after about 260
# steps, as a loop that never ends.  A loop inside one step that never
# ends is still stopped.  Here with --item-repeats 8: 10 steps of 4 asks
# each record; a step whose loop never ends (--item-bool true) stops.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'

import torch


class Opt(torch.optim.Optimizer):
    def __init__(self, params):
        super().__init__(params, dict(lr=0.1))

    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                m = p.grad.abs().max().item()        # item:optimizer
                while p.grad.abs().max() > 1e-3:     # item:bool
                    p.grad.mul_(0.5)
                p.add_(p.grad, alpha=-g["lr"] / (m + 1))


ps = [torch.nn.Parameter(torch.randn(16, device="cuda")) for _ in range(4)]
opt = Opt(ps)
for i in range(10):
    opt.zero_grad()
    sum((p * p).sum() for p in ps).backward()
    opt.step()
print("steps", i + 1)
PY
(cd "$tmp" && $MEMSIM record --fake --item-repeats 8 -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "^steps 10$" "$tmp/out" || fail "not 10 steps: $(cat "$tmp/out")"
if (cd "$tmp" && $MEMSIM record --fake --item-repeats 8 --item-bool true \
	-o "$tmp/b.csv" -- "$PY" a.py) >"$tmp/out2" 2>&1; then
	fail "a loop that never ends within a step was not stopped: $(tail -3 "$tmp/out2")"
fi
grep -q "a.py:14 step asked for a bool .item() 8 times" "$tmp/out2" ||
	fail "not stopped by the guard: $(tail -5 "$tmp/out2")"
finish recorder_step_item_repeats.sh
