#!/bin/sh
# memsim record --fake: cudnn.benchmark's find of a stride-2
# backward-data convolution of a wide layer of a few thousand positions
# (a 3x3 kernel, 32768 <= K*C < 65536, 4096 < N*H*W <= 16384:
# kernels.strided_fft_candidate; AdaHessian's WRN-16-8, 32 images, took
# the FFT at 32 x 32, N*H*W 32768, and at 16 x 16 with 256 -> 512
# channels) allocates the chosen plan's
# workspace, not the four phases' tiled FFT (kernels.fft_data_strided).
# PyTorch's find (get_plans_from_find -> generate_and_filter_plans)
# allocates the largest workspace of every plan cuDNN's heuristics and
# fallback list give; for such layers the H200 (cuDNN 9.19) gave none of
# the FFT: RepDistiller's resnet8x4 (train_student.py, KD and factor
# transfer), whose layer3.0.conv1, 128 -> 256 channels 3x3 at 16 x 16,
# took 13.8 MB on the GPU for 64 images where the recording took the
# FFT's 800 MB (+50% peak), and the two 16 x 16 layers of
# tests/data/record/cudnn_find_stride2.tsv that the FFT rule missed (that
# table against the rule: recorder_conv_find.sh).  The same layer at 8
# images (N*H*W 2048) keeps the FFT's 600,973,328 bytes.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
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
