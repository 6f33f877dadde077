#!/bin/sh
# memsim record --fake: TorchScript's fuser stays off.  On a CUDA build of
# PyTorch it compiled a scripted function's fusion group through the CUDA
# driver at the function's first optimized call and the recording stopped
# with "Error in dlopen: libcuda.so.1" (effdet's scripted
# _batch_detection); a CPU build never fuses on the GPU, so with one this
# checks only the recording (`make check MEMSIM_PYTHON=PY` names the
# Python: a CUDA build's shows the fault).  The function runs op by op
# at every call: 1000 x 4 floats (16,000 bytes, blocks of 16,384) are x,
# y, the previous call's z, exp, sigmoid and its double live at once,
# six blocks (docs/recording-boundary.md).  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/j.csv" -- "$PY" "$SRC/recorder/jit_fuser.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "^fuse on gpu False$" "$tmp/out" || fail "fuser: $(cat "$tmp/out")"
grep -q "^peak 98304$" "$tmp/out" || fail "peak: $(cat "$tmp/out")"
$MEMSIM run --json "$tmp/j.csv" >"$tmp/run.json" || fail "run"
grep -q '"allocated_bytes.all.peak": 98304' "$tmp/run.json" ||
	fail "replayed peak: $(grep allocated_bytes.all.peak "$tmp/run.json")"
finish recorder_jit_fuser.sh
