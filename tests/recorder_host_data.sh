#!/bin/sh
# memsim record --fake: a CPU factory's large output is real when the
# script's own code makes it (a synthetic dataset), fake only while a
# module is built (its weights, made before .cuda(): host.building_model,
# docs/recording-boundary.md).  locuslab/TCN's adding problem draws its
# sequences with torch.rand (more than 1 MiB) and reads them element by
# element: each read was an assumption and a fake op (567 s to record
# against 16 s on the H200), and the data's sums were not the program's.
# Here the script prints the same under the recorder as without it, and a
# Linear's 4 MiB weight built on the CPU still stays fake.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
torch.manual_seed(0)
N, L = 500, 1000
x = torch.rand([N, 1, L])
mask = torch.zeros([N, 1, L])
y = torch.zeros([N, 1])
for i in range(N):
    p = torch.randperm(L)[:2]
    mask[i, 0, p] = 1
    y[i, 0] = x[i, 0, p[0]] + x[i, 0, p[1]]
print("data %.6f %s" % (y.sum().item(), type(x) is torch.Tensor))
PY
cat >"$tmp/b.py" <<'PY'
import torch
m = torch.nn.Linear(1024, 1024)
print("weight real", type(m.weight.data) is torch.Tensor)
m.cuda()
PY
"$PY" "$tmp/a.py" >"$tmp/want" 2>&1 || fail "python: $(tail -3 "$tmp/want")"
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1
grep -q 'never allocated GPU memory' "$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
got=$(grep '^data' "$tmp/err")
[ "$got" = "$(cat "$tmp/want")" ] || fail "host data: '$got', not '$(cat "$tmp/want")'"
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/b.csv" -- "$PY" b.py) \
	>"$tmp/err" 2>&1 || fail "record b: $(tail -3 "$tmp/err")"
grep -q '^weight real False' "$tmp/err" || fail "the Linear's weight: $(grep weight "$tmp/err")"
finish recorder_host_data.sh
