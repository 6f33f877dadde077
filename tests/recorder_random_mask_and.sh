#!/bin/sh
# memsim record --fake (rules): the product (&, *, logical_and) of two
# masks of independent random draws is true with the product of their
# probabilities (docs/recording-values.md, Values._draws, apart()):
# airbench's batch_crop selects the images of one shift with
# `(shifts[:, 0] == sy) & (shifts[:, 1] == sx)`, shifts = randint(-2, 3,
# (n, 2)): a 25th of them on the GPU, not --dynamic-fraction's half.
# The two columns of one random tensor share no element (offsets 0 and
# 1 modulo the stride 2); two rand() calls are other storages.  Masks
# of the same draws (`(x == 1) * (x <= 1)`) are not independent: the
# count stays --dynamic-fraction's.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
n = 2048
shifts = torch.randint(-2, 3, size=(n, 2), device="cuda")
m = (shifts[:, 0] == 1) & (shifts[:, 1] == -1)
print("and", m.nonzero().shape[0])
print("same", ((shifts[:, 0] == 1) * (shifts[:, 0] <= 1)).sum().item())
a = torch.rand(n, device="cuda") < 0.5
b = torch.rand(n, device="cuda") < 0.2
print("two", (a & b).sum().item(), torch.logical_and(a, b).sum().item(),
      (a * b).nonzero().shape[0])
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# 2048 / 25 = 81.92: 82; 0.5 * 0.2 * 2048 = 204.8: 205; the same draws'
# product: half of 2048
want="and 82
same 1024
two 205 205 205"
got=$(grep -v '^memsim record' "$tmp/err")
[ "$got" = "$want" ] || fail "counts: $(echo "$got" | tr '\n' '|')"
finish recorder_random_mask_and.sh
