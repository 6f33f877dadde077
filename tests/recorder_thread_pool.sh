#!/bin/sh
# memsim record --fake: GPU ops in the workers of Python's thread pools.
# MONAI's CacheDataset fills its cache by a multiprocessing ThreadPool's
# imap of its transforms, whose ToDeviced moves each volume to the GPU
# (MONAI tutorials' brats_training_ddp.py); concurrent.futures'
# ThreadPoolExecutor runs submitted functions alike.  A pool's worker
# loop is the standard library's, so the recorder took its threads for
# a library's host work and ran them without its modes (lifecycle.
# _library_thread): `.to("cuda")` there ran CUDA's own kernel ("Could not
# run 'aten::empty_strided' with arguments from the 'CUDA' backend").
# The workers run under the modes now: each pool's 4 tensors of 4096
# bytes are recorded.  Needs Python 3 and PyTorch; skips (77) without
# them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/t.py" <<'PY'
import concurrent.futures
import sys
from multiprocessing.pool import ThreadPool

import torch


def load(i):
    return torch.full((32, 32), float(i)).to("cuda")


a = ThreadPool(2).map(load, range(4))
with concurrent.futures.ThreadPoolExecutor(2) as ex:
    b = list(ex.map(load, range(4)))
print(*sorted({str(t.device) for t in a + b}), len(a + b), file=sys.stderr)
PY
$MEMSIM record -o "$tmp/t.csv" -- "$PY" "$tmp/t.py" >/dev/null 2>"$tmp/err" ||
	fail "record: $(grep -v 'registered at' "$tmp/err" | tail -3)"
grep -q '^cuda:0 8$' "$tmp/err" || fail "devices: $(grep -v '^memsim' "$tmp/err")"
awk -F, '$3 == "alloc" && $5 == 4096' "$tmp/t.csv" | wc -l | tr -d ' ' >"$tmp/n"
[ "$(cat "$tmp/n")" = 8 ] || fail "allocations of 4096 bytes: $(cat "$tmp/n")"

finish recorder_thread_pool.sh
