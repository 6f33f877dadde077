#!/bin/sh
# The measurements behind traces/memsim_record/kernels.py, on a GPU machine:
# the convolution and attention probe grids (kernel_probe.py) and real runs
# of the workloads with kernel temporaries, with C++ frames (--snapshot).
#   sh validate/device/kernels_device.sh OUTDIR
# tests/data/record/conv_ws.tsv, sdpa_ws.tsv and conv_wgrad.tsv hold what conv.json,
# sdpa.json and wgrad.json gave on the H200 (2026-12-01).
set -u
o=$1; mkdir -p "$o"
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$here/../../traces" PYTHONUNBUFFERED=1
timeout 110 python3 "$here/kernel_probe.py" conv "$o/conv.json" 80 > "$o/conv.log" 2>&1
timeout 70 python3 "$here/kernel_probe.py" sdpa "$o/sdpa.json" 45 > "$o/sdpa.log" 2>&1
for w in cnn_scaler vit encdec moe unet256 unet128 unet64; do
  timeout 70 python3 -m memsim_record --gpu --snapshot "$o/$w.frames.pickle" \
    -o "$o/$w.real.csv" -- "$here/../../tests/recorder/workloads.py" $w > "$o/$w.real.log" 2>&1
done
# The denser backward-weight grid (conv_wgrad.tsv; 2026-12-01, 821 probes).
timeout 120 python3 "$here/wgrad_probe.py" "$o/wgrad.json" 150 > "$o/wgrad.log" 2>&1
