#!/bin/sh
# memsim record --fake (rules): masks of random draws are counted with
# their probability, not --dynamic-fraction (docs/recording-values.md,
# Values._draws).  rand < 0.15 selects 15% of the tokens (a masked
# language model's masking on the GPU), bernoulli(p) p of them, a
# comparison of uniform integers the share of their range that passes;
# unique of uniform integers the expected number of distinct values,
# bincount as many bins as the range's top + 1.  Each figure is the
# rule's: ceil(p n), ceil(n (1 - (1 - 1/n)^k)).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
ids = torch.randint(5, 1000, (8, 512), device="cuda")
mask = torch.rand(ids.shape, device="cuda") < 0.15
print("mlm", ids[mask].numel(), int(mask.sum()), (~mask).nonzero().shape[0])
b = torch.bernoulli(torch.full((4096,), 0.2, device="cuda")).bool()
print("bernoulli", b.nonzero().shape[0])
d = torch.empty(4096, device="cuda").bernoulli_(0.9)
print("bernoulli_", d.nonzero().shape[0])
s = torch.rand(4096, device="cuda") * 2 - 1
print("affine", s[s > 0.5].numel(), (1 - s >= 1.5).sum().item())
r = torch.randint(0, 10, (1000,), device="cuda")
print("ints", (r == 3).nonzero().shape[0], (r < 3).sum().item(),
      r[r.float() >= 7.5].numel(), ((torch.rand(1000, device="cuda") * 10)
                                    .long() == 9).sum().item())
print("unique", r.unique().numel(), r.bincount().numel(),
      torch.unique_consecutive(r).numel(),
      torch.randint(0, 1000, (64,), device="cuda").unique().numel())
e = torch.randint(0, 100, (2, 5000), device="cuda")
print("pairs", (e[0] != e[1]).sum().item(), (e[0] == e[0]).sum().item(),
      e[:, e[0] == torch.randint(50, 250, (5000,), device="cuda")].shape[1])
x = torch.randn(4096, device="cuda")
print("normal", x[x > 0.5].numel())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# 4096 tokens: 15% is 614.4, 615 selected, the other 3481 (the mask,
# once counted, has values); bernoulli 0.2 and
# 0.9 of 4096; 2 rand - 1 > 0.5 a quarter, 1 - s >= 1.5 (s <= -0.5) a
# quarter; of 0..9: == 3 a tenth, < 3 three tenths, >= 7.5 two tenths,
# floor(10 rand) == 9 a tenth; unique of 1000 draws of 10 values:
# 10 (9.99997), 10 bins, 1 + 999 * 0.9 = 900.1 runs, 901; 64 draws of
# 1000 values: 62.03, 63; two rows of random edges among 100 nodes:
# equal ends with probability 1/100, 4950 of 5000 differ; a row against
# itself (the same elements) all; 0..99 against 50..249:
# 50 common values of 100 * 200 pairs, 12.5 of 5000, 13; randn > 0.5:
# 1 - Phi(0.5) = 0.308538 of 4096, 1264 (tests/recorder_normal_masks.sh).
want="mlm 615 615 3481
bernoulli 820
bernoulli_ 3687
affine 1024 1024
ints 100 300 200 100
unique 10 10 901 63
pairs 4950 5000 13
normal 1264"
got=$(grep -v '^memsim record' "$tmp/err")
[ "$got" = "$want" ] || fail "counts: $(echo "$got" | tr '\n' '|')"
# one assumption each of the twelve masks of random draws first counted
$MEMSIM info --json "$tmp/a.csv" | tr -d ' \n' | grep -q '"mask:random":12,' ||
	fail "mask:random assumptions: $($MEMSIM info --json "$tmp/a.csv" | tr -d ' \n' | grep -o '"assumptions":{[^}]*}')"
finish recorder_random_masks.sh
