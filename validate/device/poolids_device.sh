#!/bin/bash
# The H200 run behind tests/data/pools/*.pickle and tests/data/together
# (issue 15), from the repository root on a GPU machine (no memsim build):
#   bash validate/device/poolids_device.sh OUTDIR
# 1. validate/device/pools_device.sh: the pools recordings (real.tsv);
# 2. pool_snapshots.py: snapshot pickles of the pools workloads, history
#    from the start or part way, dumped at the end or while the pools live;
# 3. together.py: two processes on one GPU, each recorded alone, then both
#    at once (together/README says what came out).
set -u
export PYTHONUNBUFFERED=1
out=$1
here=tests/recorder
dev=validate/device
mkdir -p "$out/pools" "$out/snaps" "$out/tog" "$out/sync"
nvidia-smi --query-gpu=name,memory.total,memory.used,memory.free --format=csv > "$out/smi.txt" 2>&1
timeout 150 sh $dev/pools_device.sh "$out/pools" mempool graph compiled
for v in graph_full graph_live graph_late mempool_full mempool_live mempool_late compiled_full; do
  t=40; case $v in compiled*) t=90;; esac
  timeout $t python3 $here/pool_snapshots.py $v "$out/snaps/$v.pickle" >> "$out/snaps/stats.tsv" 2> "$out/snaps/$v.log"
done
export PYTHONPATH=$PWD/traces
rec() { timeout $1 python3 -m memsim_record --gpu -o "$out/tog/$2.csv" -- $here/together.py $3 "$out/sync" $4 > "$out/tog/$2.log" 2>&1; }
rec 60 A.alone A alone
rec 60 B.alone B alone
rm -f "$out/sync"/*
rec 120 A A "" &
pa=$!
rec 120 B B ""
wait $pa
