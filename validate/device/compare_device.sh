#!/bin/sh
# Real vs --fake on a GPU machine: for each workload of workloads.py, a
# real run (memsim record --gpu, which prints torch.cuda.max_memory_allocated
# and max_memory_reserved), a --fake recording with the GPU visible and one
# with it hidden (CUDA_VISIBLE_DEVICES=).  Results go to $1 (a folder);
# replay the fake traces with `memsim run` where memsim is built.
#   sh validate/device/compare_device.sh OUTDIR [WORKLOAD...]
set -u
out=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
progs=$here/../../tests/recorder   # the workload programs
export PYTHONPATH="$here/../../traces${PYTHONPATH:+:$PYTHONPATH}"
wl=${*:-"gpt gpt_bf16 llama encdec vit cnn_scaler unet64 unet128 unet256 moe accum ckpt_seq int8_infer kvgen"}
mkdir -p "$out"
python3 -c 'import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0), sys.version.split()[0])' > "$out/env.txt" 2>&1
date -u >> "$out/env.txt"
flags() { case $1 in moe) echo "--dynamic-fraction 0.125";; *) echo "";; esac; }
# fake recordings in the background (CPU only), 6 at a time
for w in $wl; do echo $w; done | xargs -P 6 -I{} sh -c '
  w={}; f=$(case $w in moe) echo "--dynamic-fraction 0.125";; esac)
  python3 -m memsim_record -o '"$out"'/$w.fake.csv $f -- '"$progs"'/workloads.py $w > '"$out"'/$w.fake.log 2>&1
  CUDA_VISIBLE_DEVICES= python3 -m memsim_record -o '"$out"'/$w.nogpu.csv $f -- '"$progs"'/workloads.py $w > '"$out"'/$w.nogpu.log 2>&1' &
bg=$!
for w in $wl; do
  python3 -m memsim_record --gpu -o "$out/$w.real.csv" -- "$progs/workloads.py" $w > "$out/$w.real.log" 2>&1
  echo "$w real rc=$?" >> "$out/status.txt"
done
wait $bg
