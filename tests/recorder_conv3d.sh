#!/bin/sh
# memsim record --fake: the cuDNN workspace of an fp32 3-d
# backward-data into 1 to 3 channels at kernel 3 and stride 2, a 3-d
# UNet's last transposed convolution (MONAI's): the output gradient, one
# of 32 channels at its size, 16 bytes a filter element of each output
# channel, and 147 (kernels.conv), where the 2-d rule's x + w + y + 16
# fell short (MONAI's sliding-window evaluation on the H100: 113,260,179
# bytes at its peak, 70,782,352 by the 2-d rule).  Checked against every
# such call of tests/data/record/conv3d_monai.tsv (an H100's probe of
# MONAI's shapes), then a recording.  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
SRC=$(cd "$(dirname "$0")/.." && pwd)
PYTHONPATH="$SRC/traces" "$PY" - "$MSIM_TESTDATA/record/conv3d_monai.tsv" \
	>"$tmp/rules" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
exact = other = 0
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if line.startswith("#") or f[0] == "kind":
        continue
    kind, (n, c, k, side, s) = f[0], map(int, f[1:6])
    fw, bw = ([tuple(map(int, a.split(":"))) for a in v.split(",")]
              for v in f[6:8])
    # the descriptor's backward-data: a transposed convolution's forward
    # (its input the descriptor's output gradient), a convolution's
    # backward before its weight gradient (the kept block after the
    # first)
    if kind == "t3":
        dx, dy, ws = (n, k, 2 * side, 2 * side, 2 * side), \
            (n, c, side, side, side), [a for a, freed in fw if freed]
        wt, tr = (c, k, 3, 3, 3), True
        args = (dy, wt, dx)
    else:
        o = (side + 1) // 2 if s == 2 else side
        dx, dy = (n, c, side, side, side), (n, k, o, o, o)
        kept = [i for i, (a, freed) in enumerate(bw) if not freed]
        ws = [a for a, freed in bw[:kept[1]] if freed]
        wt, tr = (k, c, 3, 3, 3), False
        args = (dx, wt, dy)
    if (dx[1] > 3) or s != 2:
        continue
    ev = kernels.conv("forward" if tr else "data", *args, 4, (s,) * 3,
                      (1,) * 3, (1,) * 3, tr, 1, False, False, 9)
    exact += [e[2] for e in ev if e[0] == "alloc"] == ws
    other += [e[2] for e in ev if e[0] == "alloc"] != ws
print("data", exact, other)
PY
	fail "rules: $(tail -3 "$tmp/rules")"
grep -qx "data 8 0" "$tmp/rules" ||
	fail "the backward-data workspaces into 1 to 3 channels (exact, other): $(cat "$tmp/rules")"
# MONAI's UNet's last layer at its evaluation (no gradient): 4 patches
# of 32 channels at 48^3 to one channel at 96^3
cat >"$tmp/a.py" <<'PY'
import torch
t = torch.nn.ConvTranspose3d(32, 1, 3, 2, 1, output_padding=1).cuda()
with torch.no_grad():
    t(torch.randn(4, 32, 48, 48, 48, device="cuda"))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/t.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
n=$(grep -c ",alloc,[0-9]*,113260179," "$tmp/t.csv")
[ "$n" -eq 1 ] || fail "$n workspaces of 113260179 bytes, expected 1"
finish recorder_conv3d.sh
