#!/bin/sh
# A script that calls init_process_group by env:// (named or by default)
# with no launcher's environment, as RT-DETR's tools/train.py does when
# run as `python3 tools/train.py`: the real rendezvous raises ValueError
# ("environment variable RANK expected, but not set") and the script,
# catching it, trains without a process group.  Recorded without
# --world-size, the call must fail in the same way, not start the fake
# process group of a world of one (which made RT-DETR wrap its model in
# SyncBatchNorm and DDP).  With rank and world_size given, the variable
# still missing is MASTER_ADDR; tcp:// needs no environment and gets the
# fake process group.  (The program's output comes on the recorder's
# stderr.  Needs PyTorch; skips, 77, without.)
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/dist_env.py
for m in default env env-rank tcp; do
	env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT -u LOCAL_RANK \
		$MEMSIM record --fake -o "$tmp/$m.csv" -- "$PY" "$script" $m \
		>"$tmp/$m.out" 2>&1 || fail "record $m: $(tail -3 "$tmp/$m.out")"
done
for m in default env; do
	grep -q "^refused: Error initializing torch.distributed using env:// rendezvous: environment variable RANK expected, but not set" "$tmp/$m.out" ||
		fail "$m: $(cat "$tmp/$m.out")"
done
grep -q "^refused: .*environment variable MASTER_ADDR expected, but not set" "$tmp/env-rank.out" ||
	fail "env-rank: $(cat "$tmp/env-rank.out")"
grep -q "^initialized 1" "$tmp/tcp.out" || fail "tcp: $(cat "$tmp/tcp.out")"
peak() { $MEMSIM run --json "$1" | tr ',' '\n' | grep '"allocated_bytes.all.peak"' | tr -dc 0-9; }
[ "$(peak "$tmp/env.csv")" = 4194304 ] || fail "env: peak $(peak "$tmp/env.csv")"
[ "$(peak "$tmp/tcp.csv")" = 8388608 ] || fail "tcp: peak $(peak "$tmp/tcp.csv")"
# With the launcher's environment the same call starts the fake group.
RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29512 \
	$MEMSIM record --fake -o "$tmp/launched.csv" -- "$PY" "$script" env \
	>"$tmp/launched.out" 2>&1 || fail "record launched: $(tail -3 "$tmp/launched.out")"
grep -q "^initialized 1" "$tmp/launched.out" || fail "launched: $(cat "$tmp/launched.out")"
finish recorder_dist_env
