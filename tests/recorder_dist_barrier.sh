#!/bin/sh
# memsim record --fake, a distributed job's rank: init_process_group and
# new_group under TORCH_DIST_INIT_BARRIER=1 (OLMo-core sets it) end in
# c10d's store-based barrier, which counts the ranks arrived with the
# store's add; the fake group's store had none ("Tried to call pure
# virtual function ::c10d::Store::add").  Every rank is taken to have
# arrived (traces/memsim_record/dist.py).  The program reads the backend
# it asked for, "nccl", or "cpu:gloo,cuda:nccl" for none, where it read
# "fake" (OLMo-core's get_default_device refused it).  Needs PyTorch;
# skips (77) without.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/dist_barrier.py
$MEMSIM record --fake --world-size 4 --rank 1 -o "$tmp/w4.csv" -- \
	"$PY" "$script" nccl >"$tmp/w4.out" 2>&1 ||
	fail "world 4: $(tail -3 "$tmp/w4.out")"
grep -q "^backend nccl 4 1$" "$tmp/w4.out" || fail "world 4: $(cat "$tmp/w4.out")"
grep -q "^group nccl$" "$tmp/w4.out" || fail "world 4 group: $(cat "$tmp/w4.out")"
grep -q "^done (1024,)$" "$tmp/w4.out" || fail "world 4: $(cat "$tmp/w4.out")"
# as torchrun launches one process: its environment, the default backend
RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29513 \
	$MEMSIM record --fake -o "$tmp/w1.csv" -- "$PY" "$script" none \
	>"$tmp/w1.out" 2>&1 || fail "world 1: $(tail -3 "$tmp/w1.out")"
grep -q "^backend cpu:gloo,cuda:nccl 1 0$" "$tmp/w1.out" ||
	fail "world 1: $(cat "$tmp/w1.out")"
finish recorder_dist_barrier
