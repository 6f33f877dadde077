#!/bin/bash
# Workloads no test had seen (tests/recorder/hf_models.py: HF transformers and torchvision
# models from configs), real recordings under four allocator settings and
# --fake recordings with the GPU hidden, on a GPU machine:
#   bash validate/device/hf_models_device.sh OUTDIR   (writes OUTDIR/hf_models.tgz)
# tests/data/real_hf/ holds the real recordings (as binary traces) and real.tsv.
set -u
export PYTHONUNBUFFERED=1
O=${1:?outdir}; mkdir -p "$O/r"
D=$(cd "$(dirname "$0")" && pwd)
WL=$D/../../tests/recorder   # hf_models.py
export PYTHONPATH=$PWD/traces
python3 -c 'import torch, transformers, torchvision; print(torch.__version__, transformers.__version__, torchvision.__version__)' > "$O/r/env.txt" 2>&1
W="hf_t5 hf_bert hf_llama_gen hf_gpt2_ckpt tv_effnet tv_mobile_infer"
( for w in $W; do
    CUDA_VISIBLE_DEVICES= timeout 150 python3 -m memsim_record -o "$O/r/$w.nogpu.csv" -- "$WL/hf_models.py" $w > "$O/r/$w.nogpu.log" 2>&1
    echo "$w nogpu rc=$?" >> "$O/r/status.txt"
  done ) &
bg=$!
J=$O/jobs.txt; : > "$J"
for w in $W; do
  i=0
  for conf in - expandable_segments:True max_split_size_mb:64,garbage_collection_threshold:0.6 'roundup_power2_divisions:[256:1,512:2,>:8]'; do
    i=$((i+1)); echo "$w c$i $conf" >> "$J"
  done
done
export O D WL
xargs -P 6 -L 1 bash -c 'w=$0 c=$1 conf=$2; [ "$conf" = - ] && conf=
  PYTORCH_CUDA_ALLOC_CONF=$conf timeout 150 python3 -m memsim_record --gpu -o "$O/r/$w.$c.real.csv" -- "$WL/hf_models.py" $w > "$O/r/$w.$c.real.log" 2>&1
  echo "$w $c [$conf] real rc=$?" >> "$O/r/status.txt"' < "$J"
wait $bg
tar -C "$O" -czf "$O/hf_models.tgz" r && rm -rf "$O/r"
ls -la "$O"
