#!/bin/sh
# memsim record --fake: torch.unique of a bool tensor on the GPU
# (UniqueCub<bool>) counts its true elements with cub's DeviceReduce, as
# nonzero does: 1 byte of storage up to 4096 elements, beyond them the
# partials of its largest grid (21,503 bytes on 132 SMs), which the
# recording had as 1 byte at any size.  Checked against every call of an
# H100 probe (tests/data/record/unique_bool_h100.txt: 1,024 to 2^24
# elements, with and without the inverse and counts, each call's
# allocations in order), the count, the reduction, the 2-element output,
# the 2 counts and the inverse, then a recording of one call in order.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
SRC=$(cd "$(dirname "$0")/.." && pwd)
PYTHONPATH="$SRC/traces" "$PY" - "$MSIM_TESTDATA/record/unique_bool_h100.txt" \
	>"$tmp/rules" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
exact = other = 0
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("#") or len(f) < 4 or not f[0].isdigit():
        continue
    numel, inv, cnt = int(f[0]), f[1] == "1", f[2] == "1"
    pre, mid, cpre, post = kernels.unique(numel, 1, False, inv, cnt, True,
                                          True, 132)
    got = [e[2] for e in pre + mid + cpre if e[0] == "alloc"] + [2, 16] + \
        ([numel * 8] if inv else []) + \
        [e[2] for e in post if e[0] == "alloc"]
    exact += got == [int(v) for v in f[3:]]
    other += got != [int(v) for v in f[3:]]
print("calls", exact, other)
PY
	fail "rules: $(tail -3 "$tmp/rules")"
grep -qx "calls 28 0" "$tmp/rules" ||
	fail "the probe's calls (exact, other): $(cat "$tmp/rules")"
cat >"$tmp/u.py" <<'PY'
import torch
x = torch.randn(8192, device="cuda") > 0
u = torch.unique(x, return_inverse=True)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/u.csv" -- "$PY" u.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" { printf "%s ", $5 }' "$tmp/u.csv")
[ "$got" = "32768 8192 4 21503 2 16 65536 " ] ||
	fail "allocations: $got (the H100's: 4 21503 2 16 65536 after x and x > 0)"
finish recorder_unique_bool.sh
