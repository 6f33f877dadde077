#!/bin/sh
# binary_cross_entropy_with_logits' temporaries under memsim record
# --fake: ATen's composite kernel (Loss.cpp) makes log_sigmoid(input) and
# the elementwise loss (1 - target) * input - log_sigmoid before the
# reduced output and frees them after it, in the order lightning's GAN
# showed on the H200; with reduction "none" the loss is the output, and
# pos_weight adds (pos_weight - 1) and log_weight, freed before the loss
# is made.  Needs PyTorch; skips (77) without it.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/bce.py" <<'PY'
import torch
import torch.nn.functional as F
x = torch.randn(32, 1, device="cuda")
t = torch.ones(32, 1, device="cuda")
F.binary_cross_entropy_with_logits(x, t)
pw = torch.ones(1, device="cuda")
F.binary_cross_entropy_with_logits(x, t, reduction="none", pos_weight=pw)
PY
$MEMSIM record -o "$tmp/bce.csv" -- "$PY" "$tmp/bce.py" 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
# rows after the inputs (x, t) and until pw: the mean's; after pw: none's
got=$(awk -F, 'NR > 3 { print $3 ":" $5 ":" $7 }' "$tmp/bce.csv" | tr '\n' ' ')
want="alloc:128:temporary alloc:128:temporary alloc:4:other free_completed:128: free_completed:128: free_completed:4: alloc:4:input alloc:128:temporary alloc:4:temporary alloc:128:temporary free_completed:4: free_completed:128: alloc:128:other free_completed:128: "
case "$got" in
"$want"*) ;;
*) fail "rows: $got" ;;
esac
# Its backward (BinaryCrossEntropyWithLogitsBackward0): on the GPU,
# binary_cross_entropy_with_logits_backward (autograd's FunctionsManual)
# computes input.sigmoid().sub_(target).mul_(grad), one block; the fake
# tensors are tensor-subclass-like, for which it calls the out-of-place
# sub and mul (3 blocks before the fix).  With pos_weight and weight:
# t = pos_weight.mul(target), t.add(1) (sub_ target, mul_ the sigmoid,
# sub_ t, mul_ grad, mul_ weight: the gradient), the sigmoid, freed,
# then t.  Under create_graph the formula is out of place on the GPU
# too: sigmoid and sub (kept for the graph), mul, the sub freed.
cat >"$tmp/bceb.py" <<'PY'
import sys
import torch
import torch.nn.functional as F
lin = torch.nn.Linear(16, 64, bias=False, device="cuda")
x = torch.randn(8, 16, device="cuda")
t = torch.ones(8, 64, device="cuda")
kw = {}
if "pw" in sys.argv:
    kw["pos_weight"] = torch.full((64,), 2.0, device="cuda")
    kw["weight"] = torch.full((8, 64), 0.5, device="cuda")
loss = F.binary_cross_entropy_with_logits(lin(x), t, **kw)
loss.backward(create_graph="cg" in sys.argv)
PY
for case in plain pw cg; do
	$MEMSIM record -o "$tmp/$case.csv" -- "$PY" "$tmp/bceb.py" $case \
		2>"$tmp/err" || fail "record $case: $(tail -3 "$tmp/err")"
	# the node's rows: b1, b2... its blocks, x another
	got=$(awk -F, '$8 == "backward BinaryCrossEntropyWithLogitsBackward0" && $3 == "alloc" { on = 1 }
		$8 ~ /MmBackward0/ { on = 0 }
		on && $3 == "alloc" { n++; id[$4] = "b" n; printf "a:%s ", id[$4] }
		on && $3 != "alloc" { printf "f:%s ", ($4 in id) ? id[$4] : "x" }' "$tmp/$case.csv")
	case $case in
	plain) want="a:b1 f:x " ;;
	pw) want="a:b1 a:b2 a:b3 f:b3 f:b1 f:x " ;;
	cg) want="a:b1 a:b2 a:b3 f:b2 " ;;
	esac
	[ "$got" = "$want" ] || fail "backward $case: $got, want $want"
done
# The target's gradient too (its formula in the same node, after the
# input's): binary_cross_entropy_with_logits_target_backward computes
# -self * grad_output, out of place on every tensor (the neg, then the
# mul: two blocks, the neg freed), and with pos_weight
# log_sigmoid(-self).sub_(log_sigmoid(self).mul_(pos_weight))
# .mul_(grad_output): the neg, two log_sigmoids (their CUDA buffer is
# empty), one kept; out of place for subclasses before the fix (5 and 15
# blocks in the node).  binary_cross_entropy's target gradient
# (binary_cross_entropy_target_backward): logit(self).neg_().mul_(grad),
# one block beside the input's gradient.
cat >"$tmp/bcet.py" <<'PY'
import sys
import torch
import torch.nn.functional as F
x = torch.randn(8, 64, device="cuda", requires_grad=True)
t = torch.rand(8, 64, device="cuda", requires_grad=True)
if sys.argv[1] == "bce":
    loss = F.binary_cross_entropy(torch.sigmoid(x), t)
else:
    kw = {}
    if sys.argv[1] == "tpw":
        kw["pos_weight"] = torch.full((64,), 2.0, device="cuda")
    loss = F.binary_cross_entropy_with_logits(x, t, **kw)
loss.backward()
PY
for case in t tpw bce; do
	$MEMSIM record -o "$tmp/$case.csv" -- "$PY" "$tmp/bcet.py" $case \
		2>"$tmp/err" || fail "record $case: $(tail -3 "$tmp/err")"
	got=$(awk -F, '$8 ~ /^backward BinaryCrossEntropy/ && $3 == "alloc" { on = 1 }
		$8 ~ /Sigmoid|AccumulateGrad/ { on = 0 }
		on && $3 == "alloc" { n++; id[$4] = "b" n; printf "a:%s ", id[$4] }
		on && $3 != "alloc" { printf "f:%s ", ($4 in id) ? id[$4] : "x" }' "$tmp/$case.csv")
	case $case in
	# the input's gradient (sigmoid), then -self and the product
	t) want="a:b1 a:b2 a:b3 f:b2 " ;;
	# pos_weight * target, t + 1 (the gradient), the sigmoid; then
	# -self, log_sigmoid(-self) (the gradient), log_sigmoid(self)
	tpw) want="a:b1 a:b2 a:b3 f:b3 f:b1 a:b4 a:b5 a:b6 f:b6 f:b4 " ;;
	# binary_cross_entropy_backward's gradient, then the logit
	bce) want="a:b1 a:b2 " ;;
	esac
	case "$got" in
	"$want"*) ;;
	*) fail "target $case: $got, want $want" ;;
	esac
done
# F.logsigmoid: log_sigmoid_forward's buffer is empty on CUDA (the fake
# kernel makes one of the input's size): the output alone.
cat >"$tmp/ls.py" <<'PY'
import torch
import torch.nn.functional as F
x = torch.randn(8, 64, device="cuda", requires_grad=True)
F.logsigmoid(x).sum().backward()
PY
$MEMSIM record -o "$tmp/ls.csv" -- "$PY" "$tmp/ls.py" 2>"$tmp/err" ||
	fail "record logsigmoid: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $8 ~ /ls.py:4/ { printf "%s ", $5 }' "$tmp/ls.csv")
[ "$got" = "2048 4 " ] || fail "logsigmoid: $got, want 2048 4"
finish recorder_bce.sh
