#!/bin/sh
# memsim record --fake (rules): nonzero of a mask of unknown values too
# large for the mask's own spread values (over 4,194,304 elements: the
# count rule alone) takes --dynamic-fraction of its elements; its column
# k indexes dimension k, each index uniform over [0, size k) as the rule
# spreads the true elements evenly (Values.nonzero_column), so that
# `idx[idx[:, 0] == i, 1]` keeps row i's share, 1 / rows of them, not half
# of every row's (segment-anything's mask_to_rle_pytorch: the change
# indices of each of 48 masks of 640 x 480 were 3.7 M each, not 154 k,
# and their .tolist() filled the host's memory).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
lin = torch.nn.Linear(16, 600000).cuda()
m = lin(torch.randn(8, 16, device="cuda")) > 0
ci = m.nonzero()
row = ci[ci[:, 0] == 3, 1]
print("rows", ci.shape[0], row.numel(), int((ci[:, 0] == 7).sum()))
print("cols", int((ci[:, 1] < 6000).sum()), int((ci[:, -1] >= 300000).sum()))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# 8 x 600,000: half true, 2,400,000; an eighth of them in row 3 or 7
# (300,000); a hundredth in columns below 6,000 (24,000), half at or above
# 300,000 (1,200,000).
want="rows 2400000 300000 300000
cols 24000 1200000"
got=$(grep -v '^memsim record' "$tmp/err")
[ "$got" = "$want" ] || fail "counts: $(echo "$got" | tr '\n' '|')"
finish recorder_nonzero_column.sh
