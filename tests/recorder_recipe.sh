#!/bin/sh
# memsim record --fake: the host's answer for a reduction of values the
# fake run does not have (x.min(0)[0].tolist(): host:float, 1.0 each) was
# not the answer for the same reduction of the same elements computed
# again: GPyTorch's GridInterpolationKernel sets its grid's bounds from
# x.min(0)[0].tolist() and x.max(0)[0].tolist(), and its Interpolation
# raises where `(x.min(0)[0] - grid_mins).lt(-1e-7).sum().item()` is not
# 0: unknown, the mask rule counted one of the two dimensions out of the
# grid built from the host's own answers (its LOVE notebook stopped
# "Received data that was out of bounds for the specified grid").  Now
# the same reduction (op, arguments) of the same elements (storage not
# written since, offset, sizes, strides) gets the values the host was
# answered (Values._recipe); a write, or other elements, do not.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
a = torch.randn(100, 3, device="cuda")
x = torch.nn.functional.linear(a, torch.randn(2, 3, device="cuda"))
mx = x.max(0)[0].tolist()
mn = x.min(0)[0].tolist()
grid = [torch.linspace(mn[i], mx[i], 10, device="cuda") for i in range(2)]
lo = torch.stack([g.min() for g in grid])
hi = torch.stack([g.max() for g in grid])
xt = x.reshape(-1, 2)
print("below", (xt.min(0)[0] - lo).lt(-1e-7).sum().item())
print("above", (xt.max(0)[0] - hi).gt(1e-7).sum().item())
x.mul_(2)                   # written: a new question
print("written", (x.min(0)[0] - lo).lt(-1e-7).sum().item())
PY
(cd "$tmp" && PYTHONUNBUFFERED=1 $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "below 0" "above 0" "written 1"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_recipe.sh
