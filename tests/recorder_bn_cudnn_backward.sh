#!/bin/sh
# native_batch_norm_backward under memsim record --fake where the GPU's
# forward was cuDNN's: _select_batch_norm_backend sends a training-mode
# batch norm of a 3-or-more-dimensional float32 (or half with float
# parameters) input with an affine weight and bias to cudnn_batch_norm,
# whatever its memory format, and its backward is
# cudnn_batch_norm_backward: no sum_dy, sum_dy_xmu, staging_data or
# semaphores of batch_norm_backward_cuda's channels-last template, which
# the recorder gave a channels_last float32 BatchNorm2d (found beside the
# forward's staging buffers, kit r35c).  A channels_last bfloat16 input
# stays native: its four temporaries.  Needs PyTorch; skips (77) without.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
PY=${MEMSIM_PYTHON:-python3}
"$PY" -c 'import torch' 2>/dev/null || { echo "no PyTorch: skipped"; exit 77; }

# (8, 16, 32, 32) channels_last, float32 then bfloat16, each with a
# channels_last gradient: the native one's sum_dy and sum_dy_xmu (16
# floats), staging_data (2 * 16 * 16 floats) and 1 semaphore.
cat >"$tmp/bn.py" <<'PY'
import torch
bn = torch.nn.BatchNorm2d(16).cuda()
for dt in (torch.float32, torch.bfloat16):
    x = torch.randn(8, 16, 32, 32, device="cuda", dtype=dt).to(
        memory_format=torch.channels_last).requires_grad_()
    y = bn(x)
    y.backward(torch.randn_like(y))
PY
$MEMSIM record --fake -o "$tmp/bn.csv" -- "$PY" "$tmp/bn.py" 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$8 == "batch_norm_backward_cuda temporaries" { print $5 }' \
	"$tmp/bn.csv" | tr '\n' ' ')
[ "$got" = "64 64 2048 4 " ] ||
	fail "batch_norm_backward_cuda temporaries $got, expected 64 64 2048 4 (the bfloat16 one's only)"
finish recorder_bn_cudnn_backward.sh
