#!/bin/sh
# memsim record --fake: cuDNN's FFT engine for fp32 NCHW convolutions of
# kernels 7x7 and larger.  Its forward workspace is a rule of the shapes
# (kernels.fft_forward: the weight, then 16-byte frequency tiles of
# F x (F/2 + 1), F the padded image's larger side to a power of two, at
# least 16, for the larger of N*C + K*C and N*K): every call of the
# H200's probe whose workspace is that size (tests/data/record/
# conv_fft.tsv, validate/device/conv2d_kernel_probe.py) is checked here,
# exact to the byte.  Which shapes cuDNN's heuristics give it is
# cuDNN's: the recording keeps the rule's plan and notes an assumption
# cudnn:fft-possible a shape, the note naming the largest such
# workspace (Time-Series-Library's TimesNet: 32 -> 16 channels, 7x7, a
# 96 x 2 image of 32 samples, 204,572,672 bytes on the H200).  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
SRC=$(cd "$(dirname "$0")/.." && pwd)
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(32, 32, 96, 2, device="cuda")
for r in (3, 7, 7, 9):
    torch.nn.Conv2d(32, 16, r, padding=r // 2).cuda()(x)
torch.nn.Conv2d(32, 16, 7, padding=3).cuda().half()(x.half())
torch.nn.Conv2d(32, 16, 7, padding=3, stride=2).cuda()(x)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# two shapes (7x7 twice, 9x9), neither the 3x3, fp16 nor stride 2
grep -q "assumptions* (cudnn:fft-possible 2)" "$tmp/err" ||
	fail "assumptions: $(grep assumption "$tmp/err")"
grep -q "note: .* up to 204638208 bytes a call" "$tmp/err" ||
	fail "note: $(grep note "$tmp/err")"
got=$(grep -o "assumption,cudnn:fft-possible a.py:[0-9]* =[0-9]*" "$tmp/a.csv" | tr '\n' ' ')
[ "$got" = "assumption,cudnn:fft-possible a.py:4 =204572672 assumption,cudnn:fft-possible a.py:4 =204638208 " ] ||
	fail "trace: '$got'"
# the rule against the probe: each fp32 call with a workspace of the
# rule's size, and how many fp32 calls of kernels 7 to 11 have it
PYTHONPATH="$SRC/traces" "$PY" - "$MSIM_TESTDATA/record/conv_fft.tsv" >"$tmp/probe" <<'PY' || fail "probe: $(cat "$tmp/probe")"
import sys
from memsim_record import kernels
calls = fft = big = 0
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if line.startswith("#") or f[0] == "n" or f[6] != "fp32":
        continue
    n, c, k, h, w, r = map(int, f[:6])
    ws = [int(v) for v in f[7].split(",")]
    calls += r >= 7
    rule = kernels.fft_forward((n, c, h, w), (k, c, r, r), (r // 2, r // 2))
    fft += rule in ws
    # a workspace this far above the operands is the FFT's, or unexplained
    big += max(ws) > 4 * 4 * (n * c * h * w + n * k * h * w + k * c * r * r) \
        + 8 * 2 ** 20 and rule not in ws
print(calls, fft, big)
PY
read calls fft big <"$tmp/probe"
[ "$calls $fft $big" = "337 110 0" ] || fail "probe: $fft FFT workspaces in $calls fp32 calls of kernels 7 to 11, $big large ones unexplained"
finish recorder_conv_fft.sh
