#!/bin/sh
# memsim record --fake: a convolution whose input is on the GPU and whose
# weight or bias is on the CPU (or the other way round, or of another
# dtype) raises _convolution's "Input type (...) and weight type (...)
# should be the same", as on the GPU; the fake mode's convolution took
# the input's device and ran.  An empty batch is not checked (the Empty
# backend).  Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/conv_types.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
cuda="torch.cuda.FloatTensor" cpu="torch.FloatTensor"
for want in \
	"cpu weight error Input type ($cuda) and weight type ($cpu) should be the same" \
	"cpu bias error Input type ($cuda) and bias type ($cpu) should be the same" \
	"cpu depthwise error Input type ($cuda) and weight type ($cpu) should be the same" \
	"cpu transposed error Input type ($cuda) and weight type ($cpu) should be the same" \
	"cpu conv1d error Input type ($cuda) and weight type ($cpu) should be the same" \
	"cpu input error Input type ($cpu) and weight type ($cuda) should be the same" \
	"empty batch ok cuda (0, 4, 6, 6)" "same ok cuda (2, 4, 6, 6)"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
grep -q "^half input error Input type" "$tmp/err" ||
	fail "half input ran: $(cat "$tmp/err")"
finish recorder_conv_types.sh
