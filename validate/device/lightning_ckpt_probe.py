"""Lightning: fit, then test and validate from the best checkpoint.

    python3 lightning_ckpt_probe.py MODE DIR

MODE best: trainer.test(ckpt_path="best") and validate(ckpt_path="best")
(TorchCheckpointIO's torch.load with map_location=lambda storage, loc:
storage); MODE manual: torch.load(best, map_location="cpu"),
load_state_dict, test.  Checkpoints go to DIR.  On a GPU run it under
tests/corpus/wrap.py with CORPUS_REAL and CORPUS_SNAPSHOT set for the
allocator's history; record it with `memsim record --fake` for the
recording (tests/recorder_load_map.sh has the small case)."""
import sys
import torch
import torch.nn as nn
try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl
from torch.utils.data import DataLoader, TensorDataset

mode, root = sys.argv[1], sys.argv[2]


class M(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 512), nn.ReLU(),
                                 nn.Linear(512, 10))

    def step(self, b):
        x, y = b
        return nn.functional.cross_entropy(self.net(x), y)

    def training_step(self, b, i):
        return self.step(b)

    def validation_step(self, b, i):
        self.log("val_loss", self.step(b))

    def test_step(self, b, i):
        self.log("test_loss", self.step(b))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


g = torch.Generator().manual_seed(0)
ds = TensorDataset(torch.randn(256, 64, generator=g),
                   torch.randint(0, 10, (256,), generator=g))


def dl():
    return DataLoader(ds, batch_size=32)


ck = pl.callbacks.ModelCheckpoint(dirpath=root, monitor="val_loss",
                                  save_top_k=1)
tr = pl.Trainer(max_epochs=2, accelerator="gpu", devices=1, logger=False,
                enable_progress_bar=False, enable_model_summary=False,
                callbacks=[ck], default_root_dir=root,
                num_sanity_val_steps=0)
m = M()
tr.fit(m, dl(), dl())
if mode == "best":
    tr.test(m, dl(), ckpt_path="best")
    tr.validate(m, dl(), ckpt_path="best")
else:
    sd = torch.load(ck.best_model_path, map_location="cpu")
    m.load_state_dict(sd["state_dict"])
    tr.test(m, dl())
