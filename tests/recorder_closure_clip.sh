#!/bin/sh
# memsim record --fake: the work a closure does after its backward, under
# no_grad (clip_grad_norm_, as PyTorch Lightning's Precision._after_closure
# clips inside optimizer.step(closure) when gradient_clip_val is set), is
# the closure's, not the optimizer's: Optimizer.step calls the closure, and
# only what step() does outside that call is "optimizer".  Clipping or not,
# the "optimizer" allocations are the same; the clipping's are "other", as
# in a loop that clips between backward() and step().  Shown by
# Lightning-AI/tutorials' reverse-task Transformer with gradient_clip_val=5
# (kit r39d).  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# allocs FILE CATEGORY: "count x size" of that category's allocations
allocs() { grep ",alloc,.*,$2," "$1" | cut -d, -f5 | sort -n | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' '; }

cat >"$tmp/clip.py" <<'PY'
import sys
import torch
import torch.nn as nn
m = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(64, 512, device="cuda")
mode = sys.argv[1]

def closure():
    opt.zero_grad()
    loss = m(x).pow(2).mean()
    loss.backward()
    if mode == "closure":
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    return loss

for _ in range(2):
    if mode == "loop":
        closure()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
    else:
        opt.step(closure)
PY
for mode in none closure loop; do
	$MEMSIM record -o "$tmp/$mode.csv" -- "$PY" "$tmp/clip.py" $mode >"$tmp/out" 2>&1 ||
		fail "$mode: $(tail -3 "$tmp/out")"
done
# SGD's momentum buffers, one per parameter, made on the first step
for mode in none closure loop; do
	a=$(allocs "$tmp/$mode.csv" optimizer)
	[ "$a" = "1x2048 1x8192 2x4194304 " ] || fail "$mode: optimizer $a"
done
# the clipping's own blocks, "other" as between backward() and step():
# per step four 4-byte norms of the parameters, their 16-byte stack, the
# total norm, the clip coefficient and its clamp (18x4 2x16 in two steps);
# the cuBLAS workspaces.  The loop has two 4-byte and two 131072-byte
# "other" blocks more: its loss, computed outside the closure and any
# module, is no activation there.
a=$(allocs "$tmp/closure.csv" other)
[ "$a" = "18x4 2x16 1x1048576 2x33554432 " ] || fail "clipping: closure's other '$a'"
b=$(allocs "$tmp/loop.csv" other)
[ "$b" = "20x4 2x16 2x131072 1x1048576 2x33554432 " ] || fail "clipping: the loop's other '$b'"

# Lightning's Trainer with gradient_clip_val: the same optimizer blocks as
# without it
if "$PY" -c 'import lightning' 2>/dev/null; then
	cat >"$tmp/pl.py" <<'PY'
import sys
import torch
import torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

class M(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 10))

    def training_step(self, batch, i):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)

ds = TensorDataset(torch.randn(256, 512), torch.randint(0, 10, (256,)))
tr = L.Trainer(accelerator="gpu", devices=1, max_steps=3, logger=False,
               enable_checkpointing=False, enable_progress_bar=False,
               enable_model_summary=False, gradient_clip_val=float(sys.argv[1]) or None)
tr.fit(M(), DataLoader(ds, batch_size=64))
PY
	for c in 0 5; do
		$MEMSIM record -o "$tmp/pl$c.csv" -- "$PY" "$tmp/pl.py" $c >"$tmp/out" 2>&1 ||
			fail "lightning $c: $(tail -3 "$tmp/out")"
	done
	a=$(allocs "$tmp/pl0.csv" optimizer)
	b=$(allocs "$tmp/pl5.csv" optimizer)
	[ "$a" = "$b" ] || fail "lightning: optimizer without clipping '$a', with '$b'"
else
	echo "lightning not installed: its part skipped"
fi
finish recorder_closure_clip
