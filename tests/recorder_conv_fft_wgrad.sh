#!/bin/sh
# memsim record --fake: cuDNN's heuristics (cudnn.benchmark off) give an
# fp32 NCHW 3x3 "same" backward-weight convolution of small images and a
# large batch its FFT engine, whose workspace is kernels.fft_weight
# (kernels.fft_weight_chosen), and an fp32 backward-data into fewer than
# 8 channels (a transposed convolution's last layer, to RGB) no
# workspace, as the H200 showed for Lightning's CIFAR autoencoder
# (validate/device/ae_conv_probe.py, tests/data/record/conv_ae.tsv): its
# 144 MiB weight-gradient workspace was the real peak, which --fake had
# 37% short.  Before, both took the transposing engines' x + w + y.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# the probe's rows the two rules cover: each to the byte
PYTHONPATH="$SRC/traces" "$PY" - "${MSIM_TESTDATA:-tests/data}/record/conv_ae.tsv" >"$tmp/ae" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
ok = n = 0
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    f = line.split()
    tr = f[0] == "convT"
    b, c, k, h, st, pad, op = (int(v) for v in f[1:8])
    phase, real = f[8], [int(v) for v in f[10:] if int(v) > 0]
    o = (h - 1) * st - 2 * pad + 3 + op if tr else (h + 2 * pad - 3) // st + 1
    x, y = (b, c, h, h), (b, k, o, o)
    w = (c, k, 3, 3) if tr else (k, c, 3, 3)
    # the descriptor: a transposed convolution's is from its output
    dx, dw = (y, (c, k, 3, 3)) if tr else (x, w)
    dphase = {"forward": "data", "data": "forward"}.get(phase, phase) \
        if tr else phase
    if not ((dphase == "weight" and kernels.fft_weight_chosen(
            dx, dw, (st, st), (pad, pad), (1, 1))) or
            (dphase == "data" and dx[1] < 8)):
        continue
    ev = kernels.conv(phase, x, w, y, 4, (st, st), (pad, pad), (1, 1), tr,
                      1, False, False, 9)
    n += 1
    ok += [e[2] for e in ev if e[0] == "alloc"] == real
print("%d/%d" % (ok, n))
PY
	fail "the probe's rows: $(cat "$tmp/ae")"
[ "$(cat "$tmp/ae")" = "10/10" ] || fail "the probe's rows: $(cat "$tmp/ae")"
# the heuristics' whole grid (wgrad_fft_probe.py on an H100, 896 calls of
# batch 16 to 256, 16 to 128 channels in and out, sides 4 to 32, strides
# 1 and 2): the rule says FFT exactly where the weight phase's workspace
# is fft_weight() (55 calls; the first region, fitted on 7, missed 25)
PYTHONPATH="$SRC/traces" "$PY" - "${MSIM_TESTDATA:-tests/data}/record/conv_wgrad_fft.tsv" >"$tmp/grid" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
agree = fft = n = 0
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    b, c, k, h, st, fwd, data, weight = (int(v) for v in line.split())
    x, w = (b, c, h, h), (k, c, 3, 3)
    real = weight > 0 and weight == kernels.fft_weight(x, w, (1, 1))
    rule = kernels.fft_weight_chosen(x, w, (st, st), (1, 1), (1, 1))
    n += 1
    fft += real
    agree += real == rule
print("%d/%d, %d FFT" % (agree, n, fft))
PY
	fail "the grid: $(cat "$tmp/grid")"
[ "$(cat "$tmp/grid")" = "896/896, 55 FFT" ] || fail "the grid: $(cat "$tmp/grid")"
cat >"$tmp/ae.py" <<'PY'
import torch
x = torch.randn(256, 32, 16, 16, device="cuda")
conv = torch.nn.Conv2d(32, 32, 3, padding=1, bias=False).cuda()
y = conv(x)
y.backward(torch.ones_like(y))
up = torch.nn.ConvTranspose2d(32, 3, 3, stride=2, padding=1,
                              output_padding=1, bias=False).cuda()
with torch.no_grad():
    up(x)
PY
$MEMSIM record --fake --device h200 -o "$tmp/ae.csv" -- "$PY" "$tmp/ae.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $8 ~ /workspace/ { printf "%s ", $5 }' "$tmp/ae.csv")
[ "$got" = "16814096 150994944 " ] || fail "workspaces: '$got', the H200's '16814096 150994944 '"
finish recorder_conv_fft_wgrad.sh
