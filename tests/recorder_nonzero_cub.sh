#!/bin/sh
# memsim record --fake: nonzero_out_cuda's cub storage.  The count's
# cub::DeviceReduce::Sum is a single tile (1 byte of storage) up to 4096
# elements; beyond, the partials of its largest grid (SMs x 8 blocks x
# 5, 4 bytes each, rounded to 256, + 255: 21,503 bytes on 132 SMs), which
# the recording had as 1 byte; cub::DeviceSelect::Flagged's tiles hold
# 8448 elements (2815 bytes at 2^20, where 2048-element tiles gave
# 8959).  Checked against every call of an H100 probe (tests/data/
# record/nonzero_h100.txt: bool, uint8, fp16, fp32 and int64 inputs of
# 1,024 to 2^24 elements, each call's allocations in order), then a
# recording (x[mask] over 32,768 elements).  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
SRC=$(cd "$(dirname "$0")/.." && pwd)
PYTHONPATH="$SRC/traces" "$PY" - "$MSIM_TESTDATA/record/nonzero_h100.txt" \
	>"$tmp/rules" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
exact = other = 0
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("#") or len(f) < 4 or not f[1].isdigit():
        continue
    numel, count = int(f[1]), int(f[2])
    pre, post = kernels.nonzero(numel, 1, True, 132)
    got = [e[2] for e in pre if e[0] == "alloc"] + [count * 8] + \
        [e[2] for e in post if e[0] == "alloc"]
    exact += got == [int(v) for v in f[3:]]
    other += got != [int(v) for v in f[3:]]
print("calls", exact, other)
PY
	fail "rules: $(tail -3 "$tmp/rules")"
grep -qx "calls 85 0" "$tmp/rules" ||
	fail "the probe's calls (exact, other): $(cat "$tmp/rules")"
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(32768, device="cuda")
y = x[x > 0]
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
n=$(grep -c ",alloc,[0-9]*,21503," "$tmp/a.csv")
[ "$n" -eq 1 ] || fail "$n reductions of 21503 bytes, expected 1: $(cut -d, -f3,5,8 "$tmp/a.csv")"
finish recorder_nonzero_cub.sh
