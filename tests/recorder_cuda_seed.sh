#!/bin/sh
# Under --values cpu, the GPU's random ops draw from a generator of the
# recorder's own; torch.manual_seed(s) (torch/random.py, which calls
# torch.cuda.manual_seed_all) and torch.cuda.manual_seed(s) /
# manual_seed_all(s) reseed it, as they reseed the CUDA generator
# (CUDAGeneratorImpl::set_current_seed, its philox offset back to 0): a
# program that seeds again draws the same numbers again.  pytorch-tabnet's
# census notebook fits twice, each fit seeding with torch.manual_seed(0),
# and asserts that both histories are equal (its ClassificationSMOTE
# draws on the GPU): the recorder's generator went on, the second fit
# drew other numbers, the assertion failed and no trace was written.
# Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/seed.py" <<'PY'
import torch
torch.manual_seed(0)
a = torch.rand(5, device="cuda").tolist()
b = torch.randn(3, device="cuda").tolist()
torch.manual_seed(0)
assert torch.rand(5, device="cuda").tolist() == a, "torch.manual_seed"
assert torch.randn(3, device="cuda").tolist() == b
torch.cuda.manual_seed(0)
assert torch.rand(5, device="cuda").tolist() == a, "torch.cuda.manual_seed"
torch.cuda.manual_seed_all(0)
assert torch.rand(5, device="cuda").tolist() == a, "manual_seed_all"
torch.manual_seed(1)
assert torch.rand(5, device="cuda").tolist() != a, "another seed"
print("ok")
PY
$MEMSIM record --fake --values cpu -o "$tmp/seed.csv" -- "$PY" \
	"$tmp/seed.py" >"$tmp/err" 2>&1 ||
	fail "record --values cpu: $(grep -v '^memsim record: ' "$tmp/err" | tail -2)"
grep -q '^ok$' "$tmp/err" || fail "no ok: $(tail -3 "$tmp/err")"
finish recorder_cuda_seed.sh
