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
# program's functions too.  A bool asked elsewhere keeps the default.
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
finish recorder_assert.sh
