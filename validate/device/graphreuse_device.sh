#!/bin/bash
# Record tests/recorder/graphreuse.py's workloads with memsim record --gpu on
# a GPU machine (no memsim build needed there), each once more without the
# recorder (its memory_stats must be the same), and the owncap probe.
#   bash validate/device/graphreuse_device.sh OUTDIR MYALLOC_SO [RECORDER_DIR [NAME...]]
# (NAME: the recordings of the list below to make; default all)
# MYALLOC_SO: tests/recorder/myalloc.c built with
#   gcc -shared -fPIC -O2 -o myalloc.so tests/recorder/myalloc.c -ldl
set -u
out=$1
so=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
here=$(cd "$(dirname "$0")" && pwd)
rec=${3:-$here/../../traces}
shift 3 2>/dev/null || shift $#
only=" $* "
prog=${PROG:-$here/../../tests/recorder/graphreuse.py}
export PYTHONPATH="$rec${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export MYALLOC_SO="$so"
mkdir -p "$out"
python3 -c 'import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0), sys.version.split()[0])' > "$out/env.txt" 2>&1
# name, workload, PYTORCH_CUDA_ALLOC_CONF
while read -r name w conf; do
  [ "$only" = "  " ] || case $only in *" $name "*) ;; *) continue ;; esac
  [ "$conf" = - ] && conf=
  PYTORCH_CUDA_ALLOC_CONF=$conf timeout 60 python3 -m memsim_record --gpu \
    -o "$out/$name.csv" --snapshot "$out/$name.pickle" -- "$prog" "$w" \
    > "$out/$name.log" 2>&1
  echo "$name recorded rc=$?" >> "$out/status.txt"
  PYTORCH_CUDA_ALLOC_CONF=$conf timeout 40 python3 "$prog" "$w" \
    > "$out/$name.plain.log" 2>&1
  echo "$name plain rc=$?" >> "$out/status.txt"
done <<'LIST'
reuse_on reuse graph_capture_record_stream_reuse:True
reuse_off reuse graph_capture_record_stream_reuse:False
ownpool ownpool -
ownpool_exp ownpool expandable_segments:True
delpool delpool -
delown delown -
LIST
[ "$only" = "  " ] || exit 0
timeout 40 python3 "$prog" owncap > "$out/owncap.log" 2>&1
echo "owncap rc=$?" >> "$out/status.txt"
