#!/bin/sh
# Everything the README's real-vs-fake table needs, in one device call:
#   sh validate/device/device_all.sh OUTDIR
set -u
o=$1
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$here/../../traces" PYTHONUNBUFFERED=1
sh "$here/compare_device.sh" "$o"
# The real search for `memsim fit`: gptfit B under a 6 GiB cap, B = 10..22.
for b in 10 11 12 13 14 15 16 17 18 19 20 21 22; do
  WL_CAP=6442450944 python3 "$here/../../tests/recorder/workloads.py" gptfit $b > "$o/fit_$b.log" 2>&1
  echo "$b rc=$?" >> "$o/fit.txt"
done
# Kernel allocations with their C++ frames, for the rules of fake.py.
for w in gpt_bf16 cnn_scaler; do
  python3 -m memsim_record --gpu --snapshot "$o/$w.frames.pickle" \
    -o "$o/$w.frames.csv" -- "$here/../../tests/recorder/workloads.py" $w > "$o/$w.frames.log" 2>&1
done
# The probe grids and snapshots behind traces/memsim_record/kernels.py.
sh "$here/kernels_device.sh" "$o/kernels"
