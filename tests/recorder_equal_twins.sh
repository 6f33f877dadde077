#!/bin/sh
# memsim record --fake: torch.equal(a, b) of two tensors of unknown
# values made by the same elementwise op of the same elements was the
# .item() rule of a bool (item:bool, False by default).  GPyTorch's
# kernels divide x1 and x2 by the lengthscale and ask
# torch.equal(x1_, x2_) (Kernel.covar_dist), True in training, where x2
# is x1: False took sq_dist's path for two inputs (x2's centring, norms
# and padding) and dist()'s torch.cdist plus a clamped copy (an N x N
# more) where the kernel is a distance's (Matern).  Now the outputs of one
# recipe (op, each tensor argument's storage, write count, offset, sizes,
# strides, dtype, the other arguments; an argument made by such a recipe
# named by it: values.py's _twin) are equal where neither was written
# since, assumption equal:same (no NaN in them).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(100, 3, device="cuda")
ls = torch.rand(1, 3, device="cuda") + 0.5
x1, x2 = x, x
a, b = x1.div(ls), x2.div(ls)
print("twins", torch.equal(a, b))
print("views", torch.equal(a.unsqueeze(0), b.unsqueeze(0)))
print("other", torch.equal(a, x.div(ls + 0)))
print("slice", torch.equal(a[1:], b[:-1]))
# GPyTorch's lengthscale: a softplus of the raw parameter at each access
raw = torch.zeros(1, 3, device="cuda", requires_grad=True)
z = torch.randn(100, 3, device="cuda", requires_grad=True)
ls1 = torch.nn.functional.softplus(raw)
ls2 = torch.nn.functional.softplus(raw)
print("chain", torch.equal(z.div(ls1), z.div(ls2)))
x.mul_(2)
print("written", torch.equal(a, x.div(ls)))
PY
(cd "$tmp" && PYTHONUNBUFFERED=1 $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "twins True" "views True" "other False" "slice False" "chain True" \
	"written False"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_equal_twins.sh
