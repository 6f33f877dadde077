#!/bin/sh
# memsim record --fake: a topk leaves out the elements the program set
# to the end of their tensor's range that ranks last (values.py: abs's
# range [0, inf), Values._pin, Values._unpinned).  Time-Series-Library's
# TimesNet finds its periods from an FFT: the amplitudes abs(rfft(x))
# averaged, the zero frequency's set to 0 (`frequency_list[0] = 0`),
# topk's indices to the host, and x.shape[1] // index the periods that
# shape its 2-D convolutions.  The routing of a topk of unknown values
# chose indices 0..k-1: a period 96 // 0 (numpy: 0, a warning) and
# reshape(B, 0, 0, N), a RuntimeError of the recorded program that the
# real run never meets.  abs's range is kept whatever its size (more
# than values.py's SHADOW_LIMIT elements here, as TimesNet's on PSM).  Needs Python 3
# and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(64, 96, 32, device="cuda")
xf = torch.fft.rfft(x, dim=1)              # 49 frequencies, 100352 in all
amp = abs(xf).mean(0).mean(-1)
amp[0] = 0
_, top = torch.topk(amp, 3)
top = top.detach().cpu().numpy()
period = x.shape[1] // top
print("periods", period.tolist())
y = x.reshape(64, 96 // period[0], period[0], 32)
# the smallest: the pinned zero ranks first, nothing left out
_, low = torch.topk(amp, 2, largest=False)
# a value set inside the range ([0, inf): 5) is not left out
b = abs(xf).mean(0).mean(-1)
b[0] = 5
_, top5 = torch.topk(b, 2)
print("top5", top5.tolist())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# the top 3 of frequencies 1..48 (uniform routing over the 48 left):
# 1, 2, 3, periods 96, 48, 32
grep -q "^periods \[96, 48, 32\]$" "$tmp/out" || fail "periods: $(cat "$tmp/out")"
grep -q "^top5 \[0, 1\]$" "$tmp/out" || fail "not pinned at the bottom: $(cat "$tmp/out")"
grep ',assumption,' "$tmp/a.csv" | cut -d, -f8 >"$tmp/got"
cat >"$tmp/want" <<'W'
routing a.py:6 =uniform E=48 k=3 (1 of 49 pinned at 0.0 left out)
routing a.py:12 =uniform E=49 k=2
routing a.py:16 =uniform E=49 k=2
W
cmp -s "$tmp/got" "$tmp/want" || fail "assumptions: $(diff "$tmp/want" "$tmp/got")"
finish recorder_topk_pinned.sh
