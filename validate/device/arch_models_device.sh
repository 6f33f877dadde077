#!/bin/bash
# The architectures set of workloads (tests/recorder/arch_models.py), on a GPU machine:
#   bash validate/device/arch_models_device.sh OUTDIR [RECORDER_DIR]
# real recordings under the default settings (c1) and expandable_segments
# (c2), snapshots with C++ frames of the default run, --fake recordings
# with the GPU hidden, and the cuDNN RNN and transposed/3-D convolution probes
# (rnn_probe.py, convx_probe.py).  Writes
# OUTDIR/arch_models.tgz (real), fake.tgz and snaps.tgz.
set -u
export PYTHONUNBUFFERED=1
O=${1:?outdir}; mkdir -p "$O/r" "$O/s"
D=$(cd "$(dirname "$0")" && pwd)
WL=$D/../../tests/recorder   # arch_models.py
export PYTHONPATH=${2:-$PWD/traces}
python3 -c 'import torch, transformers, torchvision; print(torch.__version__, transformers.__version__, torchvision.__version__, torch.backends.cudnn.version())' > "$O/r/env.txt" 2>&1
W=${W:-"lstm_lm gru_amp tv_vit_fused unet_gn tv_video3d tenc_padmask ckpt_fn_accum recsys_bag hf_distilbert_cls"}
timeout 100 python3 "$D/rnn_probe.py" "$O/r/rnn_probe.json" 70 > "$O/r/rnn_probe.log" 2>&1 &
p1=$!
timeout 100 python3 "$D/convx_probe.py" "$O/r/convx_probe.json" 70 > "$O/r/convx_probe.log" 2>&1 &
p2=$!
J=$O/jobs.txt; : > "$J"
for c in snap c1 nogpu c2; do
  for w in $W; do
    conf=-; [ $c = c2 ] && conf=expandable_segments:True
    echo "$w $c $conf" >> "$J"
  done
done
# every job ends by 280 s after the start, none starts after 220 s
T0=$(date +%s)
export O D WL T0
xargs -P 12 -L 1 bash -c 'w=$0 c=$1 conf=$2; [ "$conf" = - ] && conf=
  left=$((280 - $(date +%s) + T0)); [ $left -gt 120 ] && left=120
  if [ $left -lt 60 ]; then echo "$w $c skipped" >> "$O/r/status.txt"; exit 0; fi
  if [ $c = nogpu ]; then
    CUDA_VISIBLE_DEVICES= timeout $left python3 -m memsim_record -o "$O/r/$w.nogpu.csv" -- "$WL/arch_models.py" $w > "$O/r/$w.nogpu.log" 2>&1
  elif [ $c = snap ]; then
    timeout $left python3 -m memsim_record --gpu --snapshot "$O/s/$w.pickle" -o "$O/s/$w.snap.csv" -- "$WL/arch_models.py" $w > "$O/s/$w.snap.log" 2>&1
  else
    PYTORCH_CUDA_ALLOC_CONF=$conf timeout $left python3 -m memsim_record --gpu -o "$O/r/$w.$c.real.csv" -- "$WL/arch_models.py" $w > "$O/r/$w.$c.real.log" 2>&1
  fi
  echo "$w $c [$conf] rc=$?" >> "$O/r/status.txt"' < "$J"
wait $p1
echo "rnn probe rc=$?" >> "$O/r/status.txt"
wait $p2
echo "convx probe rc=$?" >> "$O/r/status.txt"
rm -f "$O/s/"*.snap.csv
mkdir -p "$O/f" && mv "$O/r/"*.nogpu.* "$O/f/"
tar -C "$O" -czf "$O/fake.tgz" f && rm -rf "$O/f"
tar -C "$O" -czf "$O/arch_models.tgz" r && rm -rf "$O/r"
# the snapshots, largest dropped first until the archive fits in 15 MiB
while :; do
  tar -C "$O" -czf "$O/snaps.tgz" s
  [ $(stat -c %s "$O/snaps.tgz") -le 15728640 ] && break
  big=$(ls -S "$O/s/"*.pickle 2>/dev/null | head -1)
  [ -n "$big" ] || break
  echo "dropped $big" >> "$O/s/dropped.txt"; rm -f "$big"
done
rm -rf "$O/s" "$J"
ls -la "$O"
