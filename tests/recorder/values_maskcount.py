# tests/recorder_maskcount.sh: one mask of unknown values, counted twice
# (x-transformers' entropy tokenizer: x[mask].split(mask.sum(-1).tolist())).
import sys
import torch
ent = torch.randn(2, 16, device="cuda").softmax(-1)
ids = torch.arange(16, device="cuda").expand(2, 16)
mask = ent >= 0.1
if sys.argv[1:] == ["cast-pad"]:
    # h-net's dynamic chunking: the mask read as numbers first (a cast,
    # a running count), then a nonzero of a pad of it
    counts = mask.long().sum(dim=-1)
    pos = torch.nn.functional.pad(mask, (0, 1), value=True).nonzero()[:, 1]
    print("cast", counts.tolist(), "padded", pos.shape[0], "pieces",
          [len(s) for s in pos.split((counts + 1).tolist())], "running",
          mask.cumsum(-1)[:, -1].tolist())
    sys.exit(0)
if sys.argv[1:] == ["sum-first"]:
    counts = mask.sum(dim=-1)
    sel = ids[mask]
else:
    sel = ids[mask]
    counts = mask.sum(dim=-1)
n = counts.tolist()
print("counts", n, "selected", sel.shape[0], "rows", [len(s) for s in sel.split(n)])
print("nonzero", torch.nonzero(mask).shape[0], "masked", ent.masked_select(mask).shape[0])
lens = torch.diff(sel.view(2, -1), prepend=torch.full((2, 1), -1, device="cuda"))
print("ends", mask[:, -1].tolist(), "lengths", lens.sum(-1).tolist())
