#!/bin/sh
# memsim record --symbolic B=V of a program with FFTs on CUDA.  PyTorch's
# meta kernels of _fft_r2c, _fft_c2r and _fft_c2c (torch/
# _meta_registrations.py, _exec_fft) resize_ their output to the batched
# sizes, which a fake tensor of symbolic sizes refuses ("tried to
# directly modify sizes for customized tensor"): any rfft2 of a batch
# of B samples (FourCastNet's AFNO2D) could not be recorded with B
# symbolic.  The recorder now makes the one-plan transforms' output
# itself (symbolic.py _fft_output: _exec_fft's strides), and _exec_fft's
# input-layout copies (recorder_fft_layout.sh) are symbolic too: the
# trace instantiated at B equals the per-value recording.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/f.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
x = torch.randn(B, 6, 10, 16, device="cuda", requires_grad=True)
f = torch.fft.rfft2(x, dim=(1, 2), norm="ortho")
y = torch.fft.irfft2(f, s=(6, 10), dim=(1, 2), norm="ortho")
y.backward(torch.randn_like(y))
u = torch.randn(B, 3, 64, device="cuda")
v = torch.fft.irfft(torch.fft.rfft(u) * 2, n=64)
PY
$MEMSIM record --fake --symbolic B=5 -o "$tmp/s.csv" -- "$PY" "$tmp/f.py" 5 \
	>"$tmp/err" 2>&1 || fail "record --symbolic: $(tail -3 "$tmp/err")"
# rfft2's copy of x (B x 6 x 10 x 16 floats), symbolic
grep -q ',3840\*B,0,temporary,_fft_r2c$' "$tmp/s.csv" ||
	fail "no symbolic rfft2 layout copy"
for b in 2 3 5; do
	$MEMSIM record --fake -o "$tmp/p$b.csv" -- "$PY" "$tmp/f.py" $b \
		>/dev/null 2>&1 || fail "record B=$b"
	$MEMSIM convert --at B=$b "$tmp/s.csv" "$tmp/i$b.csv" >/dev/null ||
		fail "convert --at B=$b"
	cmp -s "$tmp/p$b.csv" "$tmp/i$b.csv" ||
		fail "B=$b: instantiated != recorded: $(diff "$tmp/p$b.csv" "$tmp/i$b.csv" | head -4)"
done
finish recorder_fft_symbolic.sh
