#!/bin/sh
# memsim record --fake: cudnn.benchmark's find of a stride-2
# backward-data convolution of small images both wide and large (sides
# <= 16, K*C >= 32768, N*H*W > 8192: kernels.strided_fft_candidate;
# AdaHessian's WRN-16-8, 32 images, took the FFT at 32 x 32 and at
# 16 x 16 with 256 -> 512 channels) allocates the chosen plan's
# workspace, not the four phases' tiled FFT (kernels.fft_data_strided).
# PyTorch's find (get_plans_from_find -> generate_and_filter_plans)
# allocates the largest workspace of every plan cuDNN's heuristics and
# fallback list give; for such layers the H200 (cuDNN 9.19) gave none of
# the FFT: RepDistiller's resnet8x4 (train_student.py, KD and factor
# transfer), whose layer3.0.conv1, 128 -> 256 channels 3x3 at 16 x 16,
# took 13.8 MB on the GPU for 64 images where the recording took the
# FFT's 800 MB (+50% peak), and the two 16 x 16 layers of
# tests/data/record/cudnn_find_stride2.tsv that the FFT rule missed.  The
# same layer at 8 images (N*H*W 2048) keeps the FFT's 600,973,328 bytes.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
SRC=$(cd "$(dirname "$0")/.." && pwd)
# the probe's stride-2 backward-data finds of kernels of 3 or more: the
# rule's (within 512 bytes), or below it where it is the plan's and
# another engine's was larger (the 256 -> 512 layer at 16 x 16: 44 MB,
# the plan 34 MB); none above it (before: the two 16 x 16 layers)
PYTHONPATH="$SRC/traces" "$PY" - "$MSIM_TESTDATA/record/cudnn_find_stride2.tsv" \
	>"$tmp/rules" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
exact = below = above = 0
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if line.startswith("#") or f[0] != "D":
        continue
    xs, ws = (tuple(map(int, v.split("x"))) for v in f[1:3])
    pad, find, chosen = int(f[5]), int(f[10]), int(f[11])
    if ws[2] < 3:
        continue
    pred = kernels.conv_find_rule(chosen, 4, xs[0], xs[1], ws[0], xs[2],
                                  xs[3], ws[2], ws[3], pad, pad, 0)
    exact += abs(pred - find) <= 512
    below += pred < find - 512
    above += pred > find + 512
print("strided", exact, below, above)
PY
	fail "rules: $(tail -3 "$tmp/rules")"
grep -qx "strided 58 1 0" "$tmp/rules" ||
	fail "the stride-2 finds (exact, below, above): $(cat "$tmp/rules")"
cat >"$tmp/a.py" <<'PY'
import torch
torch.backends.cudnn.benchmark = True
c = torch.nn.Conv2d(128, 256, 3, 2, 1, bias=False).cuda()
for n in (64, 52, 8):
    x = torch.randn(n, 128, 16, 16, device="cuda", requires_grad=True)
    c(x).sum().backward()
# 32 images (AdaHessian's WRN-16-8): the FFT stays a candidate at 32 x 32
# and at 16 x 16 with 256 -> 512 channels
x = torch.randn(32, 128, 32, 32, device="cuda", requires_grad=True)
c(x).sum().backward()
d = torch.nn.Conv2d(256, 512, 3, 2, 1, bias=False).cuda()
x = torch.randn(32, 256, 16, 16, device="cuda", requires_grad=True)
d(x).sum().backward()
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/t.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# the FFT's 800,129,040 and 757,452,816 bytes (64 and 52 images): none;
# 8 images: once
for size in 800129040 757452816; do
	n=$(grep -c ",alloc,[0-9]*,$size," "$tmp/t.csv")
	[ "$n" -eq 0 ] || fail "$n finds of the FFT's $size bytes, expected none"
done
n=$(grep -c ",alloc,[0-9]*,600973328," "$tmp/t.csv")
[ "$n" -eq 1 ] || fail "8 images: $n finds of 600973328 bytes, expected 1"
n=$(grep -c ",alloc,[0-9]*,705724432," "$tmp/t.csv")
[ "$n" -eq 1 ] || fail "32 x 32: $n finds of 705724432 bytes, expected 1"
n=$(grep -c ",alloc,[0-9]*,2517696528," "$tmp/t.csv")
[ "$n" -eq 1 ] || fail "256 -> 512: $n finds of 2517696528 bytes, expected 1"
finish recorder_conv_find_wide.sh
