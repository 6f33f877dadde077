#!/bin/sh
# memsim record --fake: a complex-to-real FFT on CUDA (_fft_c2r_cufft,
# aten/src/ATen/native/cuda/SpectralOps.cpp) clones its input
# ("Complex to real FFTs may overwrite the input buffer, so must always
# clone", gh-34551) after allocating the real output, and frees the clone
# when it returns.  safari's Hyena (standalone_hyena.py's fftconv: irfft of
# u_f * k_f in every operator, forward) had no such temporary in its
# recording.  A real-to-complex FFT of an aligned contiguous input, and a
# complex-to-complex one: no clone (cuFFT's work area is cuFFT's choice and
# not modelled).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
u = torch.randn(4, 256, 2048, device="cuda")
f = torch.fft.rfft(u)
y = torch.fft.irfft(f, n=2048)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" { printf "%s+%s", s, $5; s = " ";
	if ($7 == "temporary" && $8 ~ /_fft_c2r/) t[$4] = 1 }
	$3 == "free_completed" && ($4 in t) { printf " -" }
	END { print "" }' "$tmp/a.csv")
# u (4 x 256 x 2048 float: 8 MiB); its rfft (4 x 256 x 1025 complex64:
# 8396800 bytes), no clone; the irfft's real output (8 MiB), then the
# clone of its complex input, freed
want="+8388608 +8396800 +8388608 +8396800 -"
[ "$got" = "$want" ] || fail "allocations: $got"
finish recorder_fft_c2r.sh
