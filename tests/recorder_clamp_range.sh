#!/bin/sh
# memsim record --fake: Stable-Baselines3's SAC actor clamps its log std,
# `th.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX)`, and its
# DiagGaussianDistribution makes the scale `th.ones_like(mean_actions) *
# log_std.exp()`: torch.distributions.Normal's argument check (scale >
# 0, validate_args on by default) stopped the recording with "Expected
# parameter scale ... to satisfy the constraint GreaterThan(lower_bound=
# 0.0)".  A clamp between two known bounds has its output's range
# whatever its input's (Values._rules), exp keeps it positive, and a
# product with a tensor of known values (ones_like's shadow) takes that
# tensor's range (the values' min and max).  The ranged value's .item()
# is the range's midpoint (docs/recording-values.md).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
from torch.distributions import Normal
lin = torch.nn.Linear(4, 2).cuda()
x = torch.randn(3, 4, device="cuda")
mean = lin(x)
log_std = torch.clamp(lin(x), -20, 2)
std = torch.ones_like(mean) * log_std.exp()
d = Normal(mean, std)
print("sample", tuple(d.sample().shape))
print("clamp", log_std[0, 0].item(), x.clamp(min=0.0, max=3.0).max().item())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "Normal's scale check: $(tail -3 "$tmp/err")"
grep -qxF "sample (3, 2)" "$tmp/err" || fail "no sample: $(cat "$tmp/err")"
grep -qxF "clamp -9.0 1.5" "$tmp/err" || fail "midpoints: $(cat "$tmp/err")"
finish recorder_clamp_range.sh
