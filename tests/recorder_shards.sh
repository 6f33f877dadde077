#!/bin/sh
# memsim record --world-size N: FSDP and FSDP2 make only this rank's
# shards (traces/memsim_record/shards.py), and the trace is the one the
# recorder wrote when it made all N of them.  tests/data/shards/
# MODE.wN.rR.csv: tests/recorder/dist_train.py MODE 1 (one step) recorded
# with --world-size N --rank R by the recorder before shards.py (torch
# 2.13, CPU build): N = 3 (uneven: 1024 rows in chunks of 342, rank 2
# keeps 340), 64 (the head's 10 rows: rank 63 gets an empty piece) and
# 512; their category and site columns since relabelled as the recorder
# now labels the sharded parameters (parameter, not "other": fake.py,
# Recorder.relabel), every size and address the same.  Needs PyTorch;
# skips (77) without.
set -u
DATA=${MSIM_TESTDATA:-tests/data}/shards
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/dist_train.py
# fakes FILE: the fake tensors a recording made (MEMSIM_COUNT_FAKES)
fakes() { sed -n 's/.* \([0-9]*\) fake tensors made.*/\1/p' "$1"; }
for m in fsdp fsdp2; do
	for wr in 3:2 64:63 512:5; do
		w=${wr%:*} r=${wr#*:} t=$m.w$w.r$r
		MEMSIM_COUNT_FAKES=1 $MEMSIM record -o "$tmp/$t.csv" \
			--world-size "$w" --rank "$r" -- "$PY" "$script" $m 1 \
			2>"$tmp/$t.err" || { fail "record $t: $(tail -3 "$tmp/$t.err")"; continue; }
		cmp -s "$tmp/$t.csv" "$DATA/$t.csv" ||
			fail "$t: trace differs from tests/data/shards/$t.csv"
	done
	# Each of the 9 parameters (FSDP: each of the 9 units' flat
	# parameter and gradient) in N pieces would be thousands more fake
	# tensors at 512 than at 3; this rank's pieces, a handful.
	a=$(fakes "$tmp/$m.w3.r2.err") b=$(fakes "$tmp/$m.w512.r5.err")
	[ -n "$a" ] && [ -n "$b" ] || { fail "$m: no count of fake tensors"; continue; }
	[ $((b - a)) -lt 100 ] && [ $((a - b)) -lt 100 ] ||
		fail "$m: $a fake tensors at world size 3, $b at 512"
done
finish recorder_shards.sh
