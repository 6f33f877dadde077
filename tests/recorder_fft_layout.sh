#!/bin/sh
# memsim record --fake: cuFFT's input layout (_exec_fft, aten/src/ATen/
# native/cuda/SpectralOps.cpp).  Every one-plan FFT on CUDA permutes its
# input batch dims first (sorted by stride) and reshapes it to (-1,
# *signal): where the batch dims do not merge into one, the reshape is a
# contiguous copy of the input, freed when _exec_fft returns.
# FourCastNet's AFNO2D (networks/afnonet.py) transforms a (B, H, W, C)
# batch over dims (1, 2): rfft2 (_fft_r2c) copies x, irfft2 (_fft_c2r)
# copies its input's clone again, and rfft2's backward (_fft_c2c)
# copies the padded gradient; none of the three copies was recorded.
# A batch of one (B = 1: the dims merge) and a transform of the last
# dim of a contiguous tensor: no copy, as before.  cuFFT's work area is
# cuFFT's choice and not modelled.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(2, 6, 10, 16, device="cuda", requires_grad=True)
f = torch.fft.rfft2(x, dim=(1, 2), norm="ortho")
y = torch.fft.irfft2(f, s=(6, 10), dim=(1, 2), norm="ortho")
y.backward(torch.randn_like(y))
PY
cat >"$tmp/b.py" <<'PY'
import torch
x = torch.randn(1, 6, 10, 16, device="cuda")
f = torch.fft.rfft2(x, dim=(1, 2), norm="ortho")
y = torch.fft.irfft2(f, s=(6, 10), dim=(1, 2), norm="ortho")
u = torch.randn(4, 256, device="cuda")
g = torch.fft.rfft(u)
PY
temps() {	# CSV: the FFTs' temporaries, "+BYTES" an allocation, "-" a free
	awk -F, '$3 == "alloc" && $7 == "temporary" && $8 ~ /_fft_/ {
		printf "%s+%s", s, $5; s = " "; t[$4] = 1 }
	$3 == "free_completed" && ($4 in t) { printf " -"; delete t[$4] }
	END { print "" }' "$1"
}
for s in a b; do
	(cd "$tmp" && $MEMSIM record --fake -o "$tmp/$s.csv" -- "$PY" $s.py) \
		>"$tmp/err" 2>&1 || fail "record $s: $(tail -3 "$tmp/err")"
done
# x: 2 x 6 x 10 x 16 float (7680 bytes), its rfft2 2 x 6 x 6 x 16
# complex64 (9216 bytes).  Forward: rfft2's copy of x; irfft2's clone
# (gh-34551) and the copy of the clone, freed in reverse.  Backward:
# irfft2's backward is an rfft2 of the gradient, which has irfft2's
# output's layout (_exec_fft's as_strided_: batch dims (B, C) adjacent
# in memory), so no copy; rfft2's backward a c2c of the padded complex
# gradient, 2 x 6 x 10 x 16 complex64 (15360 bytes), contiguous: copied
got=$(temps "$tmp/a.csv")
want="+7680 - +9216 +9216 - - +15360 -"
[ "$got" = "$want" ] || fail "B = 2: $got (want $want)"
# B = 1, and a last-dim rfft of a contiguous tensor: only irfft2's clone
got=$(temps "$tmp/b.csv")
want="+4608 -"
[ "$got" = "$want" ] || fail "B = 1: $got (want $want)"
finish recorder_fft_layout.sh
