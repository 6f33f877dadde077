#!/bin/sh
# memsim record --fake: a clamp of a floating value the recording does
# not know bounds it on one side ([lo, inf) or (-inf, hi]: Values._rules;
# floats and integers), and its .item() is the default
# answer 1.0 where that lies in the range, else the range's end
# (Range.clip; assumption item:range): int(torch.clamp(scale, min=80)),
# a size at least 80, was 1 and made a one-hot of 8,000 bytes where the
# GPU makes 640,000; the same of integers (a count clamped, then its
# max(), where integer tensors kept no infinite end and the answer was 1;
# a comparison the range decides).  A bound the default answer meets
# leaves it as it was.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
import torch.nn.functional as F
x = torch.randn(1000, device="cuda")
idx = torch.randint(0, 80, (1000,), device="cuda")
n = int(torch.clamp(x.abs().max() * 10, min=80))
oh = F.one_hot(idx, num_classes=n)
print(n, float(torch.clamp(x.sum(), max=-5)),
      float(torch.clamp(x.sum(), min=-3.5)))
PY
(cd "$tmp" && $MEMSIM record --fake -o a.csv -- "$PY" a.py) >"$tmp/out" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# (the script's output goes to stderr, memsim record's stdout its own)
grep -qx "80 -5.0 1.0" "$tmp/err" ||
	fail "the answers: $(head -1 "$tmp/err")"
awk -F, '$3 == "alloc" && $5 == 640000' "$tmp/a.csv" | grep -q . ||
	fail "no one-hot of 1,000 x 80 int64: $(grep -c alloc "$tmp/a.csv") allocations"
grep -q "item:range a.py:5 =80" "$tmp/a.csv" ||
	fail "no item:range assumption at a.py:5"
cat >"$tmp/b.py" <<'PY'
import torch
import torch.nn.functional as F
x = torch.randn(1000, device="cuda")
idx = torch.randint(0, 80, (1000,), device="cuda")
counts = (x * 100).long()
n = int(counts.clamp(min=80).max())
oh = F.one_hot(idx, num_classes=n)
m = counts.clamp(max=-3)
print(n, int(m[0]), bool((m < 0).all()), int(counts.clamp(min=-7)[3]))
PY
(cd "$tmp" && $MEMSIM record --fake -o b.csv -- "$PY" b.py) >"$tmp/out" \
	2>"$tmp/err" || fail "record b.py: $(tail -3 "$tmp/err")"
grep -qx "80 -3 True 1" "$tmp/err" ||
	fail "the integer answers: $(head -1 "$tmp/err")"
awk -F, '$3 == "alloc" && $5 == 640000' "$tmp/b.csv" | grep -q . ||
	fail "b.py: no one-hot of 1,000 x 80 int64"
grep -q "item:range b.py:6 =80" "$tmp/b.csv" ||
	fail "no item:range assumption at b.py:6"
finish recorder_clamp_item.sh
