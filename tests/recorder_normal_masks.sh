#!/bin/sh
# memsim record --fake (rules): masks of normal draws are counted with
# the normal distribution's probability, not --dynamic-fraction
# (Values._normal_draws).  torch.randn, randn_like and normal_(mean, std)
# make independent normal draws; views, gathers, a constant added or
# multiplied by keep them (a + b Z), abs folds them; a comparison with a
# constant is Z in an interval, true with Phi's share, and two of the
# same tensor's elements anded are Z in both: nflows' spline `inside =
# (inputs >= -tail_bound) & (inputs <= tail_bound)` of flow.sample's
# randn holds 99.73% of them at a bound of 3 (half before).  Each figure
# is ceil(p n), its complement's n less it.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
n = 1 << 17
x = torch.randn(n, device="cuda")
print("gt", x[x > 0.5].numel(), (x <= -1.0).sum().item())
inside = (x >= -3) & (x <= 3)
outside = ~inside
print("inside", outside.nonzero().shape[0], bool(torch.any(inside)),
      int(inside.sum()))
y = torch.empty(n, device="cuda").normal_(1.0, 2.0)
print("normal_", (y < 1.0).sum().item(), (2 * y - 2 <= 0).sum().item(),
      (3 - y > 5).sum().item())
print("abs", (x.abs() <= 1.0).sum().item(),
      (torch.randn(n, device="cuda").abs() * 2 > 2).sum().item())
z = torch.randn(n, 2, device="cuda")
s = z[:, torch.tensor([1], device="cuda")]
m = (s >= -1) & (s <= 1)
print("gather", s[m].numel(), (z[:, 0] > 0).sum().item())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# n = 131072: 1 - Phi(0.5) = 0.3085375 (40441), Phi(-1) = 0.1586553
# (20796); |Z| <= 3: 0.9973002 (130719), its complement counted first:
# ceil(0.0026998 n) = 354, the mask the other 130718; N(1, 2) < 1 half,
# 2y - 2 <= 0 half, 3 - y > 5 (Z < -1.5) 0.0668072 (8757); |Z| <= 1
# 0.6826895 (89482), 2|Z| > 2 0.3173105 (41591); a gathered column in
# [-1, 1] 89482, another column > 0 half.
want="gt 40441 20796
inside 354 True 130718
normal_ 65536 65536 8757
abs 89482 41591
gather 89482 65536"
got=$(grep -v '^memsim record' "$tmp/err")
[ "$got" = "$want" ] || fail "counts: $(echo "$got" | tr '\n' '|')"
finish recorder_normal_masks.sh
