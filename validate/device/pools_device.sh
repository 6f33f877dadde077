#!/bin/sh
# Record tests/recorder/pools.py's workloads with memsim record --gpu on a
# GPU machine (no memsim build needed there), and each once more without the
# recorder (its memory_stats must be the same: the hooks allocate nothing).
#   sh validate/device/pools_device.sh OUTDIR [WORKLOAD...]
set -u
out=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH="$here/../../traces${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$out"
python3 -c 'import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0), sys.version.split()[0])' > "$out/env.txt" 2>&1
for w in ${*:-graph mempool compiled}; do
  t=30; [ $w = compiled ] && t=40
  snap="--snapshot $out/$w.pickle"; [ $w = compiled ] && snap=
  timeout $t python3 -m memsim_record --gpu -o "$out/$w.csv" $snap -- "$here/../../tests/recorder/pools.py" $w > "$out/$w.log" 2>&1
  echo "$w recorded rc=$?" >> "$out/status.txt"
  [ $w = compiled ] && continue
  timeout 15 python3 "$here/../../tests/recorder/pools.py" $w > "$out/$w.plain.log" 2>&1
  echo "$w plain rc=$?" >> "$out/status.txt"
done
