#!/bin/sh
# memsim record --fake: torch.isfinite(t).all() of a tensor of more than
# one element was False (the --item-bool default), where weights,
# activations and gradients of a real run are finite: a script that
# asserts it (or skips a step when it fails) stopped or went the other
# way.  isinf computes |x| == inf and isfinite (x == x) & (|x| != inf);
# the finite rule (known.py, _finite_rule) now answers |x| == inf False
# for an output of abs of any size, as it did for one element (a loss).
# A tensor masked with -inf compared with -inf directly stays unknown
# (the --item-bool default), and so does an abs output written since.
# isnan and isinf, their own kernels on CUDA (not decomposed), of a
# floating tensor of unknown value are False everywhere by the same rule.
# A one-element floating tensor of unknown value (a validation metric)
# compared with +inf or -inf (Lightning's EarlyStopping starts its best
# score at torch.tensor(inf) and asks torch.lt(current, best)) was the
# --item-bool default, False, "no improvement", where the real run
# improves: finite, below +inf.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/f.py" <<'PY'
import torch
m = torch.nn.Linear(64, 64).cuda()
x = torch.randn(100, 64, device="cuda")
m(x).sum().backward()
w = m.weight
assert torch.isfinite(w).all(), "weights not finite"
print("isfinite", bool(torch.isfinite(x).all()), bool(torch.isfinite(w.grad).all()))
print("isinf", bool(torch.isinf(w).any()), bool(w.isnan().any()))
loss = m(x).pow(2).mean()
print("loss", bool(torch.isfinite(loss)), bool(loss.isinf()))
s = torch.randn(4, 8, device="cuda").masked_fill(
    torch.ones(4, 8, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
print("masked", bool((s == float("-inf")).any()))
a = w.abs()
a.mul_(2)
print("written", bool((a == float("inf")).any()))
best = torch.tensor(float("inf"))
v = m(x).mean()
print("best", bool(torch.lt(v - 0.0, best.to(v.device))), bool(v > -float("inf")),
      bool(float("inf") <= v))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/f.csv" -- "$PY" f.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "isfinite True True" "isinf False False" "loss True False" \
	"masked False" "written False" "best True True False"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
# the -inf mask and the written abs are the --item-bool default, not the rule
n=$(grep -c ',assumption,item:bool ' "$tmp/f.csv")
[ "$n" -eq 2 ] || fail "$n item:bool assumptions: $(grep assumption "$tmp/f.csv")"
grep -q ',assumption,finite f.py:6 =True$' "$tmp/f.csv" &&
	grep -q ',assumption,finite f.py:8 =False$' "$tmp/f.csv" ||
	fail "no finite assumptions at the assert and isinf: $(grep assumption "$tmp/f.csv")"
finish recorder_isfinite.sh
