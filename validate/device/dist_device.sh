#!/bin/sh
# Real 2-GPU runs of dist_train.py against --fake --world-size 2, on a
# machine with 2 GPUs: for each MODE, torchrun --nproc-per-node 2 records
# every rank with memsim record --gpu (the run's max_memory_allocated /
# max_memory_reserved go to MODE.real.RANK.log), and each rank is recorded
# with --fake --world-size 2 --rank R, with the GPU visible and hidden
# (CUDA_VISIBLE_DEVICES=).  Results go to OUTDIR; replay the traces with
# `memsim run` where memsim is built.
#   sh validate/device/dist_device.sh OUTDIR [MODE...]
set -u
out=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
wl=$here/../../tests/recorder   # dist_train.py
export PYTHONPATH="$here/../../traces${PYTHONPATH:+:$PYTHONPATH}"
modes=${*:-"ddp zero fsdp fsdp2"}
mkdir -p "$out"
python3 -c 'import torch, sys; print(torch.__version__, torch.cuda.get_device_name(0), torch.cuda.device_count(), sys.version.split()[0])' > "$out/env.txt" 2>&1
date -u >> "$out/env.txt"
# fake recordings in the background (CPU only)
for m in $modes; do for r in 0 1; do echo "$m $r"; done; done | xargs -P 8 -L 1 sh -c '
  m=$0; r=$1
  python3 -m memsim_record -o '"$out"'/$m.fake.$r.csv --world-size 2 --rank $r -- '"$wl"'/dist_train.py $m > '"$out"'/$m.fake.$r.log 2>&1
  CUDA_VISIBLE_DEVICES= python3 -m memsim_record -o '"$out"'/$m.nogpu.$r.csv --world-size 2 --rank $r -- '"$wl"'/dist_train.py $m > '"$out"'/$m.nogpu.$r.log 2>&1' &
bg=$!
cat > "$out/rank.sh" <<'SH'
#!/bin/sh
exec python3 -m memsim_record --gpu -o "$OUTDIR/$MODE.real.$RANK.csv" -- "$WL/dist_train.py" "$MODE" > "$OUTDIR/$MODE.real.$RANK.log" 2>&1
SH
chmod +x "$out/rank.sh"
for m in $modes; do
  OUTDIR=$out MODE=$m WL=$wl python3 -m torch.distributed.run --standalone --nproc-per-node 2 --no-python "$out/rank.sh" > "$out/$m.torchrun.log" 2>&1
  echo "$m real rc=$?" >> "$out/status.txt"
done
wait $bg
