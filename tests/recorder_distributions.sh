#!/bin/sh
# memsim record --fake: torch.distributions' argument and sample checks
# (validate_args is on by default) stopped a PPO loop at its first
# action.  Distribution.__init__ and _validate_sample ask
# torch._is_all_true(constraint.check(x)), an op of its own that the
# known-value rules did not take for all(): the logits' `x == x` (known
# True, the finite rule) came out unknown, the --item-bool default False,
# "invalid values".  A sample's check is IntegerInterval's
# (x % 1 == 0) & (lo <= x) & (x <= hi): multinomial's range [0, n) gave
# the two bounds but x % 1, the range [0, 0], was not known equal to 0.
# And a rollout buffer (actions = zeros(T, N); actions[t] = d.sample())
# lost its values at the first row written: the copy_ into part of a
# tensor now keeps the range of the whole storage, the union of what it
# held and what was written, so that d.log_prob(actions[...].long())
# passes the check as on the GPU; a write of a value out of the range
# widens it (the check is unknown again by the range; the element
# written, 7.0, known: x <= 2 is False).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/d.py" <<'PY'
import torch
from torch.distributions import Categorical, Normal
logits = torch.nn.Linear(4, 3).cuda()(torch.randn(8, 4, device="cuda"))
d = Categorical(logits=logits)
a = d.sample()
print("logprob", tuple(d.log_prob(a).shape))
acts = torch.zeros((5, 8), device="cuda")
for t in range(5):
    acts[t] = Categorical(logits=logits).sample()
b = acts.reshape(-1).long()[torch.randperm(40)[:8]]
print("buffer", tuple(d.log_prob(b).shape))
print("in", bool(((acts >= 0) & (acts <= 2)).all()))
acts[0, 0] = 7.0
print("out", bool((acts <= 2).all()))
n = Normal(torch.zeros(8, device="cuda"), torch.ones(8, device="cuda"))
print("normal", tuple(n.log_prob(n.rsample()).shape))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/d.csv" -- "$PY" d.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "logprob (8,)" "buffer (8,)" "in True" "out False" \
	"normal (8,)"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
# "out" is known False, no --item-bool default: 7.0 widened the range,
# and the element it wrote is known (the buffer's known elements kept
# beside the rows of unknown samples: values.py's blank mirror)
n=$(grep -c ',assumption,item:bool ' "$tmp/d.csv")
[ "$n" -eq 0 ] || fail "$n item:bool assumptions: $(grep assumption "$tmp/d.csv")"
finish recorder_distributions.sh
