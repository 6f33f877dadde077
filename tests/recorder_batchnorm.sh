#!/bin/sh
# native_batch_norm_backward's unfused path under memsim record --fake
# (kernels.batch_norm_backward): for an input that
# batch_norm_use_channels_last_kernels takes (BatchNorm1d's (N, C),
# channels_last), batch_norm_backward_cuda reduces first
# (batch_norm_backward_reduce_cuda: sum_dy and sum_dy_xmu, then
# grad_weight and grad_bias, then staging_data and semaphores for a long
# reduction), makes grad_input after them and frees sum_dy_xmu and
# sum_dy as it returns (lightning's GAN on the H200: BatchNorm1d on (32,
# C)).  An NCHW input takes the fused kernel: its three outputs only.
# Needs Python 3; skips (77) without it, the recording part without
# PyTorch.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
PY=${MEMSIM_PYTHON:-python3}
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }

# By hand.  (32, 1024) fp32: 32 rows, one row block.  (4096, 64):
# flexible_launch_configs gives block 32 x 16 and 16 row blocks of 256
# rows, grid.x 2: staging_data 2 * 64 * 16 floats, 2 semaphores.  Only
# grad_input wanted (a frozen affine), channels-last template: the weight
# gradients are made all the same and dropped after the op.  Contiguous
# template (CL_REDUCE false) without grad_input: no sums.
PYTHONPATH="$SRC/traces" python3 - >"$tmp/hand" 2>&1 <<'PY' ||
from memsim_record import kernels as k
print(k.batch_norm_backward(1024, 32, 4, 4, [True] * 3, True, True, True))
print(k.batch_norm_backward(64, 4096, 4, 4, [True] * 3, True, True, True))
print(k.batch_norm_backward(8, 32, 4, 2, [True, False, False], True, True, True))
print(k.batch_norm_backward(8, 32, 4, 4, [False, True, True], True, True, False))
PY
	fail "hand: $(cat "$tmp/hand")"
cat >"$tmp/want" <<'EOF'
[('alloc', 'sum_dy', 4096), ('alloc', 'sum_dy_xmu', 4096), ('out', 1), ('out', 2), ('out', 0), ('free', 'sum_dy_xmu'), ('free', 'sum_dy')]
[('alloc', 'sum_dy', 256), ('alloc', 'sum_dy_xmu', 256), ('out', 1), ('out', 2), ('alloc', 'staging_data', 8192), ('alloc', 'semaphores', 8), ('free', 'semaphores'), ('free', 'staging_data'), ('out', 0), ('free', 'sum_dy_xmu'), ('free', 'sum_dy')]
[('alloc', 'sum_dy', 32), ('alloc', 'sum_dy_xmu', 32), ('alloc', 'dropped grad_weight', 16), ('alloc', 'dropped grad_bias', 16), ('out', 0), ('free', 'sum_dy_xmu'), ('free', 'sum_dy'), ('free', 'dropped grad_weight'), ('free', 'dropped grad_bias')]
[('out', 1), ('out', 2)]
EOF
cmp -s "$tmp/want" "$tmp/hand" || fail "hand-made cases: $(diff "$tmp/want" "$tmp/hand")"

"$PY" -c 'import torch' 2>/dev/null || {
	finish "recorder_batchnorm.sh (no PyTorch: the recording skipped)"; exit 0; }
# A BatchNorm1d on (32, 1024) after a Linear, and a BatchNorm2d on an NCHW
# (4, 8, 16, 16) batch: the 1-D one's backward rows in the H200's order
# (4096-byte sums, the 4096-byte weight gradients, the 131072-byte
# grad_input, the sums' frees); the 2-D one none.
cat >"$tmp/bn.py" <<'PY'
import torch
lin = torch.nn.Linear(16, 1024).cuda()
bn1 = torch.nn.BatchNorm1d(1024).cuda()
conv = torch.nn.Conv2d(3, 8, 3, padding=1).cuda()
bn2 = torch.nn.BatchNorm2d(8).cuda()
y = bn1(lin(torch.randn(32, 16, device="cuda"))).sum() + \
    bn2(conv(torch.randn(4, 3, 16, 16, device="cuda"))).sum()
y.backward()
PY
$MEMSIM record -o "$tmp/bn.csv" -- "$PY" "$tmp/bn.py" 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$8 == "batch_norm_backward_cuda temporaries" && !n { n = NR }
	n && NR < n + 7 { print $3 ":" $5 ":" $7 }' "$tmp/bn.csv" | tr '\n' ' ')
want="alloc:4096:temporary alloc:4096:temporary alloc:4096:gradient alloc:4096:gradient alloc:131072:gradient free_completed:4096: free_completed:4096: "
[ "$got" = "$want" ] || fail "the BatchNorm1d backward: $got"
got=$(awk -F, '$8 == "batch_norm_backward_cuda temporaries"' "$tmp/bn.csv" | wc -l)
[ "$got" -eq 2 ] || fail "$got batch_norm_backward_cuda temporaries, expected 2"
finish recorder_batchnorm.sh
