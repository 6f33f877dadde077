#!/bin/sh
# memsim record --fake: a one-element tensor of unknown value compared
# with a number on the host, then read, was answered twice by defaults
# that contradict each other: st-moe-pytorch's safe_one_hot computes
# max(indexes.max() + 1 + 1, capacity) with Python's builtin max, which
# asks `capacity > x` (Tensor.__bool__ of lt(x, capacity): item:bool,
# False, so x is the larger) and returns x, then F.one_hot reads x as
# its num_classes: item:int, 1, a one-hot of 1 class where the real run
# makes at least the capacity's 80 (and slices 80), and the experts'
# dispatch tensors shrank 80 times.  A comparison's assumed answer now
# bounds what it compared (Known.answered): x takes the value nearest the
# number that agrees with it (assumption item:bound), C for x >= C or
# x <= C or x == C (`x != C` answered False), C - 1 / C + 1 for an
# integral x < C / x > C; x != C (`x == C` answered False) gives none.
# The same for what a compiled graph returned of unknown value (under
# --fake); under --values cpu the graph's values are computed
# (compiled.Program._values, tests/recorder_compiled_values.sh), and
# the comparison is answered from them.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
import torch.nn.functional as F
g = torch.randn(4, 64, 16, device="cuda")
pos = (g.abs() * 10).long()
m = pos.max() + 1
k = max(m + 1, 80)
print("classes", F.one_hot(pos, k)[..., :80].shape[-1], F.one_hot(pos, k).shape[-1])
n = g.sum().long()
if n > 3:
    pass
print("n", int(n))
u = g.max().long()
print("u", int(u), bool(u == 7), bool(u != 7), int(u))
print("f", float(min(g.sum() + 0, 2.5)))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "classes 80 80" "n 3" "u 1 False False 7" "f 2.5"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
for want in "a.py:6 =80" "a.py:9 =3" "a.py:13 =7" "a.py:14 =2.5"; do
	grep -q ",assumption,item:bound $want\$" "$tmp/a.csv" ||
		fail "no item:bound $want: $(grep assumption "$tmp/a.csv")"
done
n=$(grep -c ',assumption,item:bound ' "$tmp/a.csv")
[ "$n" -eq 4 ] || fail "$n item:bound assumptions: $(grep assumption "$tmp/a.csv")"
cat >"$tmp/b.py" <<'PY'
import torch
@torch.compile
def top(g):
    return (g.abs() * 10).long().max() + 2
x = top(torch.randn(4, 64, 16, device="cuda"))
print("k", int(max(x, 80)))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/b.csv" -- "$PY" b.py) \
	>"$tmp/err" 2>&1 || fail "record b: $(tail -3 "$tmp/err")"
grep -qxF "k 80" "$tmp/err" || fail "'k 80' not in: $(cat "$tmp/err")"
grep -q ',assumption,item:bound b.py:6 =80$' "$tmp/b.csv" ||
	fail "no item:bound b.py:6 =80: $(grep assumption "$tmp/b.csv")"
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/c.csv" -- "$PY" b.py) \
	>"$tmp/err" 2>&1 || fail "record b cpu: $(tail -3 "$tmp/err")"
grep -qxF "k 80" "$tmp/err" || fail "cpu: 'k 80' not in: $(cat "$tmp/err")"
if grep -q ',assumption,item:' "$tmp/c.csv"; then
	fail "cpu: item assumptions: $(grep assumption "$tmp/c.csv")"
fi
finish recorder_item_bound.sh
