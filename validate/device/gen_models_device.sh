#!/bin/bash
# Generation and serving workloads (tests/recorder/gen_models.py), real
# recordings (memsim record --gpu, default settings) and --fake recordings
# with the GPU hidden (CUDA_VISIBLE_DEVICES=), all in parallel, on a GPU
# machine, within 3 minutes:
#   bash gen_models_device.sh OUTDIR   (writes OUTDIR/gen_models.tgz)
# Run from a memsim tree; a recorder copied next to this script (rec/)
# is used if present, else the tree's traces/.  The diffusion run also
# dumps its snapshot (C++ frames: which kernels allocated).
set -u
export PYTHONUNBUFFERED=1
O=${1:?outdir}; mkdir -p "$O/r"
D=$(cd "$(dirname "$0")" && pwd)
WL=$D/../../tests/recorder   # gen_models.py
if [ -d "$D/rec/memsim_record" ]; then export PYTHONPATH=$D/rec
else export PYTHONPATH=$PWD/traces; fi
python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__)' > "$O/r/env.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv >> "$O/r/env.txt" 2>&1
W="${FRESH3_W:-gen_beam gen_sample gen_static gen_leftpad encdec_gen diffusion serve compile_mlp}"
J=$O/jobs.txt; : > "$J"
for w in $W; do echo "$w real" >> "$J"; echo "$w nogpu" >> "$J"; done
T0=$(date +%s)
export O D WL T0
xargs -P 16 -L 1 bash -c 'w=$0 c=$1
  left=$((170 - $(date +%s) + T0)); [ $left -gt 160 ] && left=160
  if [ $left -lt 20 ]; then echo "$w $c skipped" >> "$O/r/status.txt"; exit 0; fi
  if [ $c = nogpu ]; then
    CUDA_VISIBLE_DEVICES= timeout $left python3 -m memsim_record -o "$O/r/$w.nogpu.csv" -- "$WL/gen_models.py" $w > "$O/r/$w.nogpu.log" 2>&1
  else
    snap=; [ $w = diffusion ] && snap="--snapshot $O/r/$w.pickle"
    timeout $left python3 -m memsim_record --gpu $snap -o "$O/r/$w.real.csv" -- "$WL/gen_models.py" $w > "$O/r/$w.real.log" 2>&1
  fi
  echo "$w $c rc=$? $(( $(date +%s) - T0 ))s" >> "$O/r/status.txt"' < "$J"
rm -f "$J"
tar -C "$O" -czf "$O/gen_models.tgz" r && rm -rf "$O/r"
ls -la "$O"
