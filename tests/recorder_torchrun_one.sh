#!/bin/sh
# memsim record --fake -- torchrun --nproc-per-node 1 SCRIPT (and
# python3 -m torch.distributed.run with one process): torchrun gives its
# one worker RANK=0, LOCAL_RANK=0, WORLD_SIZE=1, MASTER_ADDR and
# MASTER_PORT as it does N; the recording passed --world-size only for
# more than one process, so the script found none of them (pytorch/
# examples' distributed/ddp-tutorial-series/multigpu_torchrun.py stopped
# at os.environ["LOCAL_RANK"]).  Now a launcher of any size is one rank
# of its world: the environment and the fake process group from the
# start, DDP's buckets as for a world of one.  Without a launcher nothing
# is set (a script that decides by RANK whether to start a group).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/t.py" <<'PY'
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl")
m = DDP(torch.nn.Linear(256, 256).cuda(), device_ids=[local])
m(torch.randn(8, 256, device="cuda")).sum().backward()
print("rank", os.environ["RANK"], "local", local, "of", os.environ["WORLD_SIZE"],
      dist.get_world_size())
dist.destroy_process_group()
PY
cat >"$tmp/n.py" <<'PY'
import os
print("env", os.environ.get("RANK"), os.environ.get("LOCAL_RANK"))
import torch
torch.zeros(4, device="cuda")
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/t.csv" -- "$PY" \
	-m torch.distributed.run --nproc-per-node 1 t.py) >"$tmp/err" 2>&1 ||
	fail "torch.distributed.run, one process: $(tail -3 "$tmp/err")"
grep -qxF "rank 0 local 0 of 1 1" "$tmp/err" || fail "no result: $(cat "$tmp/err")"
if [ -x "$(dirname "$PY")/torchrun" ]; then
	(cd "$tmp" && env PATH="$(dirname "$PY"):$PATH" MEMSIM_PYTHON= \
		$MEMSIM record --fake -o "$tmp/u.csv" -- torchrun --standalone \
		--nproc-per-node 1 t.py) >"$tmp/err" 2>&1 ||
		fail "torchrun, one process: $(tail -3 "$tmp/err")"
	grep -qxF "rank 0 local 0 of 1 1" "$tmp/err" || fail "no result: $(cat "$tmp/err")"
fi
# no launcher: no environment made up
(cd "$tmp" && env -u RANK -u LOCAL_RANK $MEMSIM record --fake -o "$tmp/n.csv" -- \
	"$PY" n.py) >"$tmp/err" 2>&1 || fail "plain script: $(tail -3 "$tmp/err")"
grep -qxF "env None None" "$tmp/err" || fail "environment set: $(cat "$tmp/err")"
finish torchrun_one
