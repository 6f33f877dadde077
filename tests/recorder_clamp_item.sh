#!/bin/sh
# memsim record --fake: a clamp of a floating value the recording does
# not know bounds it on one side ([lo, inf) or (-inf, hi]: Values._rules;
# integer tensors keep no infinite end), and its .item() is the default
# answer 1.0 where that lies in the range, else the range's end
# (Range.clip; assumption item:range): int(torch.clamp(scale, min=80)),
# a size at least 80, was 1 and made a one-hot of 8,000 bytes where the
# GPU makes 640,000.  A bound the default answer meets leaves it as it
# was.  Needs Python 3 and PyTorch; skips (77) without them.
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
finish recorder_clamp_item.sh
