#!/bin/sh
# memsim record --fake, torch.load of a file the recording saved, with a
# callable map_location: torch.load asks it with each host storage and
# puts the storage where the callable's result is.  Lightning's
# TorchCheckpointIO (trainer.test(ckpt_path="best"), validate, resume)
# passes lambda storage, loc: storage: the checkpoint stays on the host
# and load_state_dict copies it into the GPU's parameters, nothing
# allocated; the recording put every saved CUDA tensor on the GPU again
# before (13 blocks a load in a small Lightning run).  .cuda() in the
# callable, or no map_location, loads to the GPU.  Skips (77) without
# PyTorch; the Lightning case runs where Lightning is installed.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/ld.py" <<'PY'
import torch
m = torch.nn.Linear(64, 512).cuda()
torch.save(m.state_dict(), "ck.pt")
sd = torch.load("ck.pt", map_location=lambda s, loc: s)
assert sd["weight"].device.type == "cpu"
m.load_state_dict(sd)
sd = torch.load("ck.pt", map_location=lambda s, loc: s.cuda())
assert sd["weight"].device.type == "cuda"
sd = torch.load("ck.pt")
assert sd["weight"].device.type == "cuda"
PY
(cd "$tmp" && $MEMSIM record -o ld.csv -- "$PY" ld.py) 2>"$tmp/err" >&2 ||
	fail "record: $(tail -3 "$tmp/err")"
# the allocations: the Linear's weight and bias, none at lines 4 and 6,
# the weight and bias at 7 and at 9
got=$(awk -F, '$3 == "alloc" { printf "%s:%s ", $8, $5 }' "$tmp/ld.csv")
want="Linear.weight:131072 Linear.bias:2048 ld.py:7 <module>:131072 ld.py:7 <module>:2048 ld.py:9 <module>:131072 ld.py:9 <module>:2048 "
[ "$got" = "$want" ] || fail "allocations: $got, want $want"
[ -e "$tmp/ck.pt" ] && fail "the recording wrote ck.pt in the user's folder"
if "$PY" -c "import lightning" 2>/dev/null; then
	cat >"$tmp/lit.py" <<'PY'
import torch
import torch.nn as nn
import lightning.pytorch as pl
from torch.utils.data import DataLoader, TensorDataset


class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(64, 10)

    def training_step(self, b, i):
        return nn.functional.cross_entropy(self.net(b[0]), b[1])

    def validation_step(self, b, i):
        self.log("val_loss", nn.functional.cross_entropy(self.net(b[0]), b[1]))

    test_step = validation_step

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


ds = TensorDataset(torch.randn(64, 64), torch.randint(0, 10, (64,)))
tr = pl.Trainer(max_epochs=1, accelerator="gpu", devices=1, logger=False,
                enable_progress_bar=False, enable_model_summary=False,
                default_root_dir="out", num_sanity_val_steps=0,
                callbacks=[pl.callbacks.ModelCheckpoint(
                    dirpath="out", monitor="val_loss")])
m = M()
tr.fit(m, DataLoader(ds, batch_size=32), DataLoader(ds, batch_size=32))
tr.test(m, DataLoader(ds, batch_size=32), ckpt_path="best")
PY
	(cd "$tmp" && $MEMSIM record -o lit.csv -- "$PY" lit.py) >"$tmp/err" 2>&1 ||
		fail "record lightning: $(tail -3 "$tmp/err")"
	n=$(grep -c ',alloc,.*cloud_io' "$tmp/lit.csv")
	[ "$n" = 0 ] || fail "lightning: $n GPU allocations in the checkpoint's load"
	# the steps' forwards (3 blocks a batch): fit's validation and the
	# test after the load, 2 batches each
	n=$(grep -c ',alloc,.*validation_step' "$tmp/lit.csv")
	[ "$n" = 12 ] || fail "lightning: $n blocks in the steps, want 12"
fi
finish recorder_load_map.sh
