#!/bin/sh
# memsim record --fake --values cpu: the gradient of a node whose formula
# takes another branch for tensor subclasses (Dispatch._plain_branch:
# cumprod_backward, prod_backward, masked_fill's) has values.  The
# recorder records the plain branch's ops, as the GPU runs them, and runs
# the subclass branch's unrecorded; that branch's result is the node's,
# and its ops' values were not computed: nor were those of every
# gradient upstream of it.  nerf-pytorch's raw2outputs (a cumprod of
# transmittances) left all of its NeRF's gradients, then its weights
# after the first optimizer step, without values (each .cpu() of a
# rendered image an assumption host:float).  The subclass branch's ops
# now have their values computed under --values cpu (nothing recorded),
# a zero in cumprod's input (the plain branch not modelled) included;
# under the rules alone the result stays unknown, as before.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.tensor([[1., 2., 3.], [0.5, 4., 0.]], device="cuda",
                 requires_grad=True)
torch.cumprod(x, -1).sum().backward()
print("cumprod", x.grad.cpu().tolist())
y = torch.tensor([1., 2., 3., 4.], device="cuda", requires_grad=True)
y.prod().backward()
print("prod", y.grad.cpu().tolist())
PY
(cd "$tmp" && PYTHONUNBUFFERED=1 $MEMSIM record --fake --values cpu \
	-o "$tmp/a.csv" -- "$PY" a.py) >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
# d/dx_k of sum_j prod_{i<=j} x_i: row 1: 1+2+6 = 9, 1+3 = 4, 2;
# row 2 (a zero): 1+4+0 = 5, 0.5+0 = 0.5, 2; prod's: 24/x
for want in "cumprod [[9.0, 4.0, 2.0], [5.0, 0.5, 2.0]]" \
	"prod [24.0, 12.0, 8.0, 6.0]" "; 0 assumptions"; do
	grep -qF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_branch_values.sh
