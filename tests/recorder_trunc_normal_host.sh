#!/bin/sh
# The host's random number generator advances under --fake as in the real
# run through torch.nn.init.trunc_normal_ of a weight built on the CPU.
# PyTorch 2.13's _no_grad_trunc_normal_ samples by rejection: it draws
# again while `mask.any()` finds a value outside [a, b], and that .any()
# of the fake weight was answered False by the rules (item:bool), so the
# recording drew once where the real run draws as often as its values
# need, and every later host draw (a DataLoader's shuffle seed) differed
# from the real program's: a cut at 3 standard deviations (torchtitan's
# and OLMo's init) draws again for any large weight.  Transformers 5's
# SigLIP init (the r36c kit's PaliGemma and SigLIP programs) left 16 to 29
# item:bool assumptions.  The script prints host draws after such an
# initialization (the rejection path, p > 0.3, and the narrow window's
# uniform path, p <= 0.3); recorded, it prints what it prints run on the
# CPU alone, with no item:bool assumption.  Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/tn.py" <<'PY'
import torch
from torch import nn
torch.manual_seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
m = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 300))
nn.init.trunc_normal_(m[0].weight, std=0.02, a=-0.06, b=0.06)
nn.init.trunc_normal_(m[1].weight, mean=2.75, std=1.0, a=2.5, b=3.0)
m = m.to(dev)
print(torch.rand(3).tolist(), torch.randperm(8).tolist())
print(tuple(m(torch.randn(4, 512, device=dev)).shape))
PY
"$PY" "$tmp/tn.py" >"$tmp/want" 2>"$tmp/err" ||
	fail "the script on the CPU: $(tail -1 "$tmp/err")"
for values in rules cpu; do
	$MEMSIM record --fake --values $values -o "$tmp/tn.csv" -- "$PY" \
		"$tmp/tn.py" >"$tmp/err" 2>&1 ||
		fail "record --values $values: $(tail -3 "$tmp/err")"
	grep -v '^memsim record: ' "$tmp/err" >"$tmp/got"
	diff "$tmp/want" "$tmp/got" >"$tmp/diff" ||
		fail "--values $values: host draws differ from the CPU run's: $(cat "$tmp/diff")"
	$MEMSIM info "$tmp/tn.csv" >"$tmp/info" 2>&1 ||
		fail "info: $(tail -1 "$tmp/info")"
	if grep -q 'item:bool' "$tmp/info"; then
		fail "--values $values: an item:bool assumption: $(grep 'item:bool' "$tmp/info")"
	fi
done
finish recorder_trunc_normal_host.sh
