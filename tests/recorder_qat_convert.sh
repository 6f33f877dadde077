#!/bin/sh
# memsim record --fake: FX quantization-aware training on the GPU, the
# model moved to the CPU and converted.  A weight over 1 MiB copied to the
# host stays fake (host:large-stays-fake); convert_fx quantizes it
# (torch.quantize_per_channel), which the fake mode cannot (a quantized
# output; quantize_per_tensor's meta answer is a float tensor), and the
# recording stopped (kit r40b's FX QAT program).  Such an op of host
# tensors runs for real on the fake ones' host values, as on the CPU of
# the real run (Dispatch._host_op).  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/qat_convert.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "converted (3, 10) torch.float32" \
	"weight torch.qint8 True (512, 1024)"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
grep -q "host:large-stays-fake" "$tmp/err" ||
	fail "the weight's host copy was not fake: $(tail -2 "$tmp/err")"
finish recorder_qat_convert.sh
