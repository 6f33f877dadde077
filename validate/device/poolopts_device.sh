#!/bin/bash
# Record tests/recorder/poolopts.py's workloads with memsim record --gpu on
# a GPU machine (no memsim build needed there), each once more without the
# recorder (its memory_stats must be the same), and the probe of what this
# PyTorch offers.  The recordings of tests/data/pools/poolopts.tsv were made
# with it (torch 2.11.0+cu130 on an H200, in two calls: 118 s, then the
# compiled_train_shapes ones, 22 s).
#   bash validate/device/poolopts_device.sh OUTDIR [RECORDER_DIR]
# (RECORDER_DIR: the folder holding memsim_record; default this tree's
# traces/).  Everything lands in OUTDIR/poolopts.tar.gz.
set -u
out=$1
here=$(cd "$(dirname "$0")" && pwd)
rec=${2:-$here/../../traces}
export PYTHONPATH="$rec${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
prog=$here/../../tests/recorder/poolopts.py
w=$out/w
mkdir -p "$w"
log=$out/log.txt
python3 -c 'import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0).total_memory, sys.version.split()[0])' > "$w/env.txt" 2>&1
rec() { # name workload timeout [PYTORCH_CUDA_ALLOC_CONF]
  local n=$1 wl=$2 t=$3 conf=${4:-}
  PYTORCH_CUDA_ALLOC_CONF=$conf timeout "$t" python3 -m memsim_record --gpu \
    -o "$w/$n.csv" --snapshot "$w/$n.pickle" -- "$prog" "$wl" \
    > "$w/$n.log" 2>&1
  echo "$n recorded rc=$? at ${SECONDS}s" >> "$log"
}
plain() {
  local n=$1 wl=$2 t=$3
  timeout "$t" python3 "$prog" "$wl" > "$w/$n.plain.log" 2>&1
  echo "$n plain rc=$? at ${SECONDS}s" >> "$log"
}
# The compiled ones in the background (compile time dominates).  Their
# plain runs come after, with Inductor's caches warm: no compile-time
# benchmarking buffers, so lower peaks than the recorded (cold) runs.
( rec compiled_train compiled_train 150 ) &
( rec compiled_infer compiled_infer 150 ) &
( rec compiled_train_shapes compiled_train_shapes 150 ) &
( rec compiled_train_shapes_exp compiled_train_shapes 150 \
  expandable_segments:True ) &
timeout 30 python3 "$prog" probe > "$w/probe.log" 2>&1
echo "probe rc=$? at ${SECONDS}s" >> "$log"
for n in oom_on oom_off nosplit_on nosplit_off checkpoint; do
  rec $n $n 40
  plain $n $n 30
done
wait
if [ "$SECONDS" -lt 170 ]; then
  ( plain compiled_train compiled_train 100 ) &
  ( plain compiled_infer compiled_infer 100 ) &
  wait
fi
echo "done at ${SECONDS}s" >> "$log"
cp "$log" "$w/"
tar -C "$out" -czf "$out/poolopts.tar.gz" w
rm -rf "$w"
