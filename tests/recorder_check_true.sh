#!/bin/sh
# memsim record --fake: torch.distributions checks a distribution's
# arguments (Distribution.__init__, validate_args on by default) and
# samples (_validate_sample) with `if not torch._is_all_true(valid):
# raise ValueError`, and torch._check_tensor_all(cond) asks
# cond._is_all_true().item().  A check of values the fake run does not
# have was answered by the .item() rule of a bool (item:bool, False by
# default) and raised: GPyTorch's to_data_independent_dist(), a
# Normal(mean, stddev) whose stddev is the square root of a predictive
# variance, stopped its SGPR notebook ("Expected parameter scale ... to
# satisfy the constraint GreaterThan(lower_bound=0.0)").  PyTorch asks
# _is_all_true only where false raises, and a recorded program ran to its
# end: True now, counted as assumption check:true.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
a = torch.randn(50, 8, device="cuda")
var = (a @ a.T).diagonal()
if var.lt(1e-6).any():
    var = var.clamp_min(1e-6)
d = torch.distributions.Normal(torch.zeros_like(var), var.sqrt())
print("normal ok")
lp = d.log_prob(torch.randn(50, device="cuda"))
print("log_prob ok")
torch._check_tensor_all(var.sqrt() > 0, lambda: "scale")
print("check ok")
# a known tensor keeps its exact answer
print("known", bool(torch._is_all_true(torch.zeros(3, device="cuda") > 0)))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "normal ok" "log_prob ok" "check ok" "known False"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
$MEMSIM info "$tmp/a.csv" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
grep -q "check:true a.py:" "$tmp/info" || fail "no check:true in: $(cat "$tmp/info")"
finish recorder_check_true.sh
