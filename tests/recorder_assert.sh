#!/bin/sh
# memsim record --fake: a bool of unknown value asked as an assert
# statement's test was the --item-bool default, False, and the recording
# stopped at `assert t.all()` with AssertionError ("no trace written"):
# DETR's generalized_box_iou asserts (boxes[:, 2:] >= boxes[:, :2]).all()
# of its predicted boxes (cx - w/2 against cx + w/2, which no range
# decides) at every Hungarian matching.  A failed assert ends the
# program, so a run there is a peak to predict of got past it: the test
# held (values.asserted, assumption item:assert): True for `assert t`,
# False for `assert not t`, each side of `assert a and b`, in the
# program's functions too.  A bool asked elsewhere keeps the default.  A
# number compared with a constant as the test is alike (an mIoU's).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(16, 4, device="cuda").sigmoid()
b = torch.stack([x[:, 0] - 0.5 * x[:, 2], x[:, 1] - 0.5 * x[:, 3],
                 x[:, 0] + 0.5 * x[:, 2], x[:, 1] + 0.5 * x[:, 3]], -1)
assert (b[:, 2:] >= b[:, :2]).all()
w = torch.randn(8, device="cuda")
assert not (w > 10).all(), "w above 10"
assert (w > -10).all() and (w < 10).all()
def check(t):
    assert t.any()
    return True
print("check", check(w > 0))
print("plain", bool((w > 0).all()))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "check True" "plain False"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
n=$(grep -c ',assumption,item:assert ' "$tmp/a.csv")
[ "$n" -eq 5 ] || fail "$n item:assert assumptions: $(grep assumption "$tmp/a.csv")"
for want in 'a.py:5 =True' 'a.py:7 =False' 'a.py:8 =True' 'a.py:10 =True'; do
	grep -q ",assumption,item:assert $want\$" "$tmp/a.csv" ||
		fail "no item:assert $want: $(grep assumption "$tmp/a.csv")"
done
grep -q ',assumption,item:bool a.py:13 =False$' "$tmp/a.csv" ||
	fail "no item:bool default at a.py:13: $(grep assumption "$tmp/a.csv")"
# A number an assert compares with a constant is what lets the program go
# on (values.asserted_number): Lightweight-Segmentation's mIoU histograms
# the intersection, prediction and label on the host, each .cpu() of a
# tensor past host.HOST_FAKE_BYTES that stays fake, and asserts
# `torch.sum(area_inter > area_union).item() == 0`, whose mask the count
# rule gave half its elements: the recording stopped with AssertionError.
# The same number compared outside an assert keeps the rules' answer.
cat >"$tmp/m.py" <<'PY'
import torch
H, W, n = 512, 1024, 19
out = torch.nn.Conv2d(3, n, 1).cuda()(torch.randn(1, 3, H, W).cuda())
target = torch.randint(0, n, (1, H, W)).cuda().float() + 1
predict = (torch.argmax(out, 1) + 1).float() * (target > 0).float()
inter = predict * (predict == target).float()
a_i = torch.histc(inter.cpu(), bins=n, min=1, max=n)
a_p = torch.histc(predict.cpu(), bins=n, min=1, max=n)
a_l = torch.histc(target.cpu(), bins=n, min=1, max=n)
union = a_p + a_l - a_i
assert torch.sum(a_i > union).item() == 0, "Intersection area should be smaller"
assert (a_i > union).sum().item() < 1
print("plain", (a_i > union).sum().item() == 0)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/m.csv" -- "$PY" m.py) \
	>"$tmp/err" 2>&1 || fail "mIoU: $(tail -3 "$tmp/err")"
grep -qxF "plain False" "$tmp/err" || fail "mIoU plain: $(tail -3 "$tmp/err")"
for want in 'm.py:11 =0' 'm.py:12 =0'; do
	grep -q ",assumption,item:assert $want\$" "$tmp/m.csv" ||
		fail "no item:assert $want: $(grep assumption "$tmp/m.csv")"
done
finish recorder_assert.sh
