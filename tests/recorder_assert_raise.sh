#!/bin/sh
# memsim record --fake: an assert written out, `if not ok: raise
# AssertionError(...)`, asked of a tensor of unknown values was the
# --item-bool default, False, and the recording stopped there: Aurora's
# FourierExpansion checks that its input (the patches' latitudes, over
# SHADOW_LIMIT elements on a 180 x 360 grid) lies in its range so, and
# aurora.rollout ended with AssertionError.  A raised AssertionError ends
# the program as a failed assert statement does: the test held
# (values.asserted, assumption item:assert), True for `if not t: raise`,
# False for `if t: raise`.  A bool before a raise of another exception,
# or before a mere load of the name, keeps the default.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(300, 300, device="cuda")
ok = torch.all(torch.logical_or(x.abs() <= 1e3, x == 0))
if not ok:
    raise AssertionError(f"not in range: {x.shape}")
bad = (x > 1e3).any()
if bad:
    raise AssertionError
def check(t, strict=True):
    if strict and not t.all():
        raise AssertionError("check")
    return True
print("check", check(x < 1e3))
if not (x > 0).all():
    print("plain False")
if (x > 0).any():
    raise ValueError("kept")
e = AssertionError if (x > 0).all() else None
print("load", e)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "check True" "plain False" "load None"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
for want in 'a.py:4 =True' 'a.py:7 =False' 'a.py:10 =True'; do
	grep -q ",assumption,item:assert $want\$" "$tmp/a.csv" ||
		fail "no item:assert $want: $(grep assumption "$tmp/a.csv")"
done
for want in 'a.py:14 =False' 'a.py:16 =False' 'a.py:18 =False'; do
	grep -q ",assumption,item:bool $want\$" "$tmp/a.csv" ||
		fail "no item:bool default $want: $(grep assumption "$tmp/a.csv")"
done
finish recorder_assert_raise.sh
