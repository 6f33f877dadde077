#!/bin/sh
# A training-mode native_batch_norm's staging buffers under memsim record
# --fake (kernels.batch_norm_forward): where the GPU takes batch_norm_cuda
# rather than cuDNN (BatchNorm1d's (N, C) input, bfloat16, half with half
# parameters, no affine) and batch_norm_choose_impl picks the channels-last
# statistics (contiguous with stride 1 along C, or channels_last),
# batch_norm_stats_channels_last_cuda_template makes, after output,
# save_mean and save_invstd, staging_data (4 * C * grid.y statistics) and
# semaphores (grid.x ints) for a reduction of 8 or more row blocks, and
# frees them as it returns (pytorch-fm's MLPs: BatchNorm1d(400) on 4096
# rows, kit r35c).  NCHW float32 (cuDNN) and evaluation mode: none.
# Needs Python 3; skips (77) without it, the recording part without
# PyTorch.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
PY=${MEMSIM_PYTHON:-python3}
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }

# By hand.  (4096, 400) fp32: flexible_launch_configs gives block 32 x 16,
# grid 13 x 16: staging 4 * 400 * 16 floats, 13 semaphores.  (32, 1024):
# one row block, none.  (4096, 64) fp64: grid 2 x 16, doubles.
PYTHONPATH="$SRC/traces" python3 - >"$tmp/hand" 2>&1 <<'PY' ||
from memsim_record import kernels as k
print(k.batch_norm_forward(400, 4096, 4))
print(k.batch_norm_forward(1024, 32, 4))
print(k.batch_norm_forward(64, 4096, 8))
PY
	fail "hand: $(cat "$tmp/hand")"
cat >"$tmp/want" <<'EOF2'
[('alloc', 'staging_data', 102400), ('alloc', 'semaphores', 52), ('free', 'semaphores'), ('free', 'staging_data')]
[]
[('alloc', 'staging_data', 32768), ('alloc', 'semaphores', 8), ('free', 'semaphores'), ('free', 'staging_data')]
EOF2
cmp -s "$tmp/want" "$tmp/hand" || fail "hand-made cases: $(diff "$tmp/want" "$tmp/hand")"

"$PY" -c 'import torch' 2>/dev/null || {
	finish "recorder_bn_forward_staging.sh (no PyTorch: the recording skipped)"; exit 0; }
# BatchNorm1d(400) on (4096, 400) in training: the output and the two
# statistics, then 102400 and 52 bytes, freed in reverse.  The same in
# evaluation, a BatchNorm2d on an NCHW float32 batch (cuDNN): none.  A
# BatchNorm2d on a channels_last bfloat16 (8, 16, 32, 32): native,
# channels-last, grid 1 x 16: 4096 and 4 bytes.
cat >"$tmp/bn.py" <<'PY'
import torch
bn1 = torch.nn.BatchNorm1d(400).cuda()
x = torch.randn(4096, 400, device="cuda")
bn1(x)
bn1.eval()
bn1(x)
bn2 = torch.nn.BatchNorm2d(16).cuda()
bn2(torch.randn(8, 16, 32, 32, device="cuda"))
bn2(torch.randn(8, 16, 32, 32, device="cuda", dtype=torch.bfloat16).to(
    memory_format=torch.channels_last))
PY
$MEMSIM record --fake -o "$tmp/bn.csv" -- "$PY" "$tmp/bn.py" 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
site="batch_norm_stats_channels_last_cuda_template staging"
n=$(awk -F, -v s="$site" '$8 == s { print NR; exit }' "$tmp/bn.csv")
[ -n "$n" ] || n=4
got=$(awk -F, -v n="$n" 'NR >= n - 3 && NR < n + 4 { print $3 ":" $5 ":" $7 }' \
	"$tmp/bn.csv" | tr '\n' ' ')
want="alloc:6553600:activation alloc:1600:activation alloc:1600:activation alloc:102400:temporary alloc:52:temporary free_completed:52: free_completed:102400: "
[ "$got" = "$want" ] || fail "the BatchNorm1d forward: $got"
got=$(awk -F, -v s="$site" '$8 == s { print $5 }' "$tmp/bn.csv" | tr '\n' ' ')
[ "$got" = "102400 52 4096 4 " ] || fail "staging rows $got, expected 102400 52 4096 4"
finish recorder_bn_forward_staging.sh
