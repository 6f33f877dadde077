#!/bin/sh
# memsim record: what the fused nodes of a compiled graph compute is
# noted as the recorder's dispatch notes it of eager ops (known.py's
# uniform values and bounds, values.py's shadows and ranges;
# compiled.Program._values).  They ran beside the recorder, so every
# value a compiled graph returned was unknown to the eager code after
# it.  st-moe-pytorch's and mixture-of-experts' safe_one_hot compute
# max(indexes.max() + 1 + 1, capacity) with Python's builtin max, which
# TorchDynamo makes a clamp(min=capacity) in the graph (Inductor's
# clamp_min); F.one_hot(num_classes=) read it after the graph break as
# --item-int's 1, a one-hot of 1 class where the real run makes the
# capacity's 80 (the compiled MoE routers' dispatch tensors 80 times too
# small).  The graph's clamp now gives its output a range as an eager
# clamp does (values.py: [80, inf) here, whose .item() is the default
# answer moved into it; [1, 3] for clamp(m, max=3) of an m at least 1,
# whose .item() is the range's lower median, 2: item:range), and a
# compiled graph's write into a tensor of known value leaves it the
# value written, not the one before.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
import torch.nn.functional as F


def safe_one_hot(indexes, max_length):
    max_index = indexes.max() + 1
    return F.one_hot(indexes, max(max_index + 1, max_length))


@torch.compile
def route(g):
    return safe_one_hot((g.abs() * 10).long(), 80)


@torch.compile
def ends(g):
    m = (g.abs() * 10).long().max() + 1
    return max(m + 1, 80), torch.clamp(m, max=3)


@torch.compile
def bump(s):
    s.add_(3)
    return s * 2


g = torch.randn(4, 64, 16, device="cuda")
print("classes", route(g).shape[-1])
c, d = ends(g)
print("ends", int(c), int(d))
s = torch.zeros((), dtype=torch.long, device="cuda")
y = bump(s)
print("bump", int(s), int(y))
PY
(cd "$tmp" && $MEMSIM record --fake --item-int 5 -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "classes 80" "ends 80 2" "bump 3 6"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
for want in "a.py:7 =80" "a.py:30 =80" "a.py:30 =2"; do
	grep -q ",assumption,item:range $want\$" "$tmp/a.csv" ||
		fail "no item:range $want: $(grep assumption "$tmp/a.csv")"
done
# the one-hot of 80 classes (4*64*16*80 int64: 2.5 MiB) is recorded
grep -q ',alloc,[0-9]*,2621440,' "$tmp/a.csv" ||
	fail "no one-hot of 80 classes: $(cut -d, -f3-6 "$tmp/a.csv" | sort -u | head -20)"
# --values cpu: the graph's values are computed (no assumption needed)
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/b.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record cpu: $(tail -3 "$tmp/err")"
for want in "classes 80" "ends 80 3" "bump 3 6"; do
	grep -qxF "$want" "$tmp/err" || fail "cpu: '$want' not in: $(cat "$tmp/err")"
done
if grep -q ',assumption,item:' "$tmp/b.csv"; then
	fail "cpu: item assumptions: $(grep assumption "$tmp/b.csv")"
fi
finish recorder_compiled_values.sh
