#!/bin/sh
# memsim record --fake on the loops frameworks train with (issue 25, item
# 8): categories follow autograd's phase, the innermost one, so a training
# step run inside optimizer.step(closure) (LBFGS, PyTorch Lightning) is
# activations and gradients, and only the optimizer's own state is
# "optimizer"; torch.utils.checkpoint in both modes; nn.DataParallel;
# Lightning's Trainer, Hugging Face's Trainer and accelerate where
# installed.  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# allocs FILE CATEGORY: "count x size" of that category's allocations
allocs() { grep ",alloc,.*,$2," "$1" | cut -d, -f5 | sort -n | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' '; }

cat >"$tmp/closure.py" <<'PY'
import torch
import torch.nn as nn
m = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 512)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(64, 512, device="cuda")

def closure():
    opt.zero_grad()
    loss = m(x).pow(2).mean()
    loss.backward()
    return loss

for _ in range(2):
    opt.step(closure)
PY
$MEMSIM record -o "$tmp/closure.csv" -- "$PY" "$tmp/closure.py" >"$tmp/out" 2>&1 ||
	fail "closure: $(tail -3 "$tmp/out")"
# Two steps: each forward's 64 x 2048 (Linear, ReLU) and 64 x 512 (Linear,
# pow) float32 outputs and the 4-byte loss; the optimizer's momentum
# buffers, one per parameter, made on the first step.
a=$(allocs "$tmp/closure.csv" activation)
[ "$a" = "2x4 4x131072 4x524288 " ] || fail "closure: activations $a"
a=$(allocs "$tmp/closure.csv" optimizer)
[ "$a" = "1x2048 1x8192 2x4194304 " ] || fail "closure: optimizer $a"
a=$(allocs "$tmp/closure.csv" gradient)
[ "$a" = "2x4 2x2048 2x8192 8x131072 4x524288 4x4194304 " ] ||
	fail "closure: gradients $a"

# torch.utils.checkpoint, reentrant and not: each records, below the
# peak of the same blocks without it; nn.DataParallel on the one GPU a
# rank sees makes the module's own allocations.
cat >"$tmp/ck.py" <<'PY'
import sys
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint
m = nn.Sequential(*[nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))
                    for _ in range(4)]).cuda()
x = torch.randn(4096, 512, device="cuda", requires_grad=True)
mode = sys.argv[1]
if mode == "dp":
    m = nn.DataParallel(m)
h = x
for b in (m.module if mode == "dp" else m):
    h = checkpoint(b, h, use_reentrant=(mode == "reentrant")) if mode in ("reentrant", "plain") else b(h)
if mode == "dp":
    h = m(x)
h.sum().backward()
PY
for mode in none reentrant plain dp; do
	$MEMSIM record -o "$tmp/ck-$mode.csv" -- "$PY" "$tmp/ck.py" $mode >"$tmp/out" 2>&1 ||
		fail "checkpoint $mode: $(tail -3 "$tmp/out")"
done
peak() { $MEMSIM run --json "$1" | sed -n 's/.*"allocated_bytes.all.peak": \([0-9]*\).*/\1/p'; }
p0=$(peak "$tmp/ck-none.csv")
for mode in reentrant plain; do
	p=$(peak "$tmp/ck-$mode.csv")
	[ -n "$p" ] && [ "$p" -lt "$p0" ] || fail "checkpoint $mode: peak $p, not below $p0"
done
# DataParallel: the blocks' forward twice (once by hand, once through
# DataParallel), so twice the activations of the plain forward.
a=$(allocs "$tmp/ck-none.csv" activation)
b=$(allocs "$tmp/ck-dp.csv" activation)
a2=$(echo "$a" | tr ' ' '\n' | awk -Fx 'NF==2 {print 2*$1 "x" $2}' | tr '\n' ' ')
[ "$b" = "$a2" ] || fail "DataParallel: activations $b, expected $a2"

# PyTorch Lightning's Trainer: DataLoader workers, the training step
# inside optimizer.step(closure=...).
if "$PY" -c 'import lightning' 2>/dev/null; then
	cat >"$tmp/pl.py" <<'PY'
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
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())

ds = TensorDataset(torch.randn(256, 512), torch.randint(0, 10, (256,)))
tr = L.Trainer(accelerator="gpu", devices=1, max_steps=3, logger=False,
               enable_checkpointing=False, enable_progress_bar=False,
               enable_model_summary=False)
tr.fit(M(), DataLoader(ds, batch_size=64, num_workers=2))
print("fitted", tr.global_step)
PY
	$MEMSIM record -o "$tmp/pl.csv" -- "$PY" "$tmp/pl.py" >"$tmp/out" 2>&1 ||
		fail "lightning: $(tail -3 "$tmp/out")"
	grep -q "^fitted 3$" "$tmp/out" || fail "lightning: steps"
	# each step's 64 x 2048 float32 Linear and ReLU outputs: activations
	n=$(grep -c ',alloc,[0-9]*,524288,0,activation,Sequential' "$tmp/pl.csv")
	[ "$n" -eq 6 ] || fail "lightning: $n 64 x 2048 activations, expected 6"
	grep -q ',alloc,[0-9]*,524288,0,optimizer,' "$tmp/pl.csv" &&
		fail "lightning: activations called optimizer"
	# Adam's two states per parameter (the 2048 x 512 weight's included)
	n=$(grep -c ',alloc,[0-9]*,4194304,0,optimizer,' "$tmp/pl.csv")
	[ "$n" -ge 2 ] || fail "lightning: Adam's states"
else
	echo "lightning not installed: its part skipped"
fi

# Hugging Face's Trainer (DataLoader workers, bf16) and accelerate's loop.
if "$PY" -c 'import transformers, accelerate' 2>/dev/null; then
	cat >"$tmp/hf.py" <<'PY'
import sys
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

class DS(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        ids = torch.randint(0, 1000, (64,))
        return {"input_ids": ids, "labels": ids.clone()}

cfg = GPT2Config(vocab_size=1000, n_positions=64, n_embd=128, n_layer=2, n_head=4)
args = TrainingArguments(output_dir=sys.argv[1], per_device_train_batch_size=8,
                         max_steps=2, report_to=[], save_strategy="no",
                         dataloader_num_workers=2, bf16=True, disable_tqdm=True)
Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=DS()).train()
print("trained")
PY
	$MEMSIM record -o "$tmp/hf.csv" -- "$PY" "$tmp/hf.py" "$tmp/hfout" >"$tmp/out" 2>&1 ||
		fail "HF Trainer: $(tail -3 "$tmp/out")"
	grep -q "^trained$" "$tmp/out" || fail "HF Trainer: not trained"
	# the batch: 8 x 64 int64 input_ids and labels, each step
	n=$(grep -c ',alloc,[0-9]*,4096,0,input,' "$tmp/hf.csv")
	[ "$n" -eq 4 ] || fail "HF Trainer: $n batch tensors, expected 4"
	cat >"$tmp/acc.py" <<'PY'
import torch
import torch.nn as nn
from accelerate import Accelerator
acc = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=2)
m = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
opt = torch.optim.AdamW(m.parameters())
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 256)), batch_size=16)
m, opt, dl = acc.prepare(m, opt, dl)
for (x,) in dl:
    with acc.accumulate(m):
        loss = m(x).pow(2).mean()
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
    acc.print(f"loss {loss.item():.3f}")
print("device", acc.device)
PY
	$MEMSIM record -o "$tmp/acc.csv" -- "$PY" "$tmp/acc.py" >"$tmp/out" 2>&1 ||
		fail "accelerate: $(tail -3 "$tmp/out")"
	grep -q "^device cuda$" "$tmp/out" || fail "accelerate: not on the GPU"
	n=$(grep -c '^loss 1.000$' "$tmp/out")
	[ "$n" -eq 4 ] || fail "accelerate: $n steps logged, expected 4"
else
	echo "transformers or accelerate not installed: their part skipped"
fi
finish recorder_phases
