#!/bin/sh
# memsim record --fake: `param.data = t` of a real host tensor keeps t's
# values with the (fake) parameter (fake.py's FakeTensor.data setter):
# Time-Series-Library's Koopa initializes its Koopman operator with
# `self.K.weight.data = torch.mm(U, V.t())` of a CPU SVD, then the model
# moves to the GPU; the moved weight had no values, and under --values
# cpu everything after it (the loss, Koopa's isnan(K).any()) was an
# assumption.  Under the rules a small tensor's values are kept too.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
lin = torch.nn.Linear(4, 4, bias=False)
lin.weight.data = torch.arange(16.0).reshape(4, 4)
m = lin.cuda()
print("sum", m.weight.sum().item())
print("out", m(torch.ones(1, 4, device="cuda")).tolist())
PY
for how in rules cpu; do
	(cd "$tmp" && $MEMSIM record --fake --values $how -o "$tmp/a.csv" -- "$PY" a.py) \
		>"$tmp/out" 2>&1 || fail "$how record: $(tail -3 "$tmp/out")"
	grep -q "^sum 120.0$" "$tmp/out" || fail "$how sum: $(cat "$tmp/out")"
	grep -q "^out \[\[6.0, 22.0, 38.0, 54.0\]\]$" "$tmp/out" || fail "$how out: $(cat "$tmp/out")"
	grep -q "; 0 assumptions$" "$tmp/out" || fail "$how assumptions: $(tail -1 "$tmp/out")"
done
finish recorder_set_data_values.sh
