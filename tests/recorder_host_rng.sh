#!/bin/sh
# The host's random number generator advances under --fake as in the real
# run.  A model built on the CPU keeps its weights fake (a Parameter of a
# host tensor, a torch.randn over 1 MiB), so their initialization drew
# nothing from the CPU generator, and every later draw on the host
# differed from the real program's: torchvision's Keypoint R-CNN chose
# other training sizes (GeneralizedRCNNTransform.torch_choice, a CPU
# uniform_), -13% allocated against the H200 (docs/corpus.md, seventh
# round).  The script prints host draws after building and initializing
# a model; recorded, it prints what it prints run on the CPU alone.
# Under --values cpu too, where a draw on a fake host tensor (the
# weight's init) was computed from the recorder's own generator and the
# program's did not advance: DETR's DataLoader seeded its workers
# otherwise and cropped its first batch at 706 x 608, not 768 x 837 as
# on the CPU alone and under the rules (+1.8% allocated, -12% reserved
# against the rules' recording).
# Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/rng.py" <<'PY'
import torch
from torch import nn
torch.manual_seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
m = nn.Sequential(nn.Linear(64, 300), nn.Conv1d(4, 8, 3),
                  nn.Embedding(1000, 256), nn.LayerNorm(64))
nn.init.trunc_normal_(m[0].weight, std=0.02)
nn.init.orthogonal_(m[0].weight)
nn.init.normal_(m[2].weight)
w = nn.Parameter(torch.empty(7, 5))
nn.init.xavier_normal_(w)
big = torch.randn(600, 600)          # 1.4 MB: stays fake under --fake
g = torch.Generator().manual_seed(1)
nn.Parameter(torch.empty(33)).data.bernoulli_(0.3, generator=g)
m = m.to(dev)
print(torch.rand(3).tolist(), torch.randint(0, 1000, (4,)).tolist(),
      torch.randperm(6).tolist(), torch.rand(2, generator=g).tolist())
x = torch.randn(8, 64, device=dev)
print(tuple(m[0](x).shape))
PY
"$PY" "$tmp/rng.py" >"$tmp/want" 2>"$tmp/err" ||
	fail "the script on the CPU: $(tail -1 "$tmp/err")"
for values in rules cpu; do
	$MEMSIM record --fake --values $values -o "$tmp/rng.csv" -- "$PY" \
		"$tmp/rng.py" >"$tmp/err" 2>&1 ||
		fail "record --values $values: $(tail -3 "$tmp/err")"
	# (the script's output comes on stderr, with the recorder's lines)
	grep -v '^memsim record: ' "$tmp/err" >"$tmp/got"
	diff "$tmp/want" "$tmp/got" >"$tmp/diff" ||
		fail "--values $values: host draws differ from the CPU run's: $(cat "$tmp/diff")"
done
finish recorder_host_rng.sh
