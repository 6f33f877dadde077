#!/bin/sh
# memsim record --fake: a tensor of no elements has every value known
# (there are none), whatever the tensor it is a view of: a reduction of
# it reads the identity of the reduction.  `mask[n:].sum().item()` of an
# empty slice of a mask of unknown values was the --item-int default, 1:
# pykan's MultKAN.prune_node counts a layer's multiplication nodes so
# (none: width [5, 0]), then built the pruned layer one node wider than
# the masks it takes (AssertionError in score_node2subnode).  Now 0
# (sum), 1 (prod), False (any), True (all), no assumption.  A reduction
# of a non-empty part keeps its rules (the mask count).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
w = torch.nn.Linear(4, 5).cuda()
x = w(torch.randn(3, 4, device="cuda")).abs().mean(0)
m = x > 0.01
print("sums", torch.sum(m[:5]).item(), torch.sum(m[5:]).item())
e = x[5:]
print("empty", e.prod().item(), e.sum().item(), bool(m[5:].any()),
      bool(m[5:].all()))
print("where", tuple(torch.where(m == True)[0].shape))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
for want in "sums 3 0" "empty 1.0 0.0 False True" "where (3,)"; do
	grep -qxF "$want" "$tmp/out" || fail "'$want' not in: $(cat "$tmp/out")"
done
grep ',assumption,' "$tmp/a.csv" | grep -v -e ',assumption,mask a.py:5 =3$' \
	-e ',assumption,nonzero a.py:9 =3$' >"$tmp/other" &&
	fail "other assumptions: $(cat "$tmp/other")"
finish recorder_empty_values.sh
