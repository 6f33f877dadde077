#!/bin/sh
# A request of 0 bytes is no request: the caching allocator's allocate(0)
# returns a null pointer and takes no block (no trace row on a real GPU).
# A kernel rule's temporary of an empty tensor (smooth_l1_loss's
# elementwise loss, which torchvision's Faster R-CNN computes over the
# sampled positives, none in a batch) was written as "alloc ... 0", and
# memsim refused the whole recording: "alloc of 0 bytes".
# Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/z.py" <<'PY'
import torch
import torch.nn.functional as F
x = torch.randn(16, 4, device="cuda", requires_grad=True)
y = torch.randn(8, 4, device="cuda")
t = torch.randn(16, 4, device="cuda")
labels = torch.zeros(16, dtype=torch.long, device="cuda")
pos = torch.where(labels > 0)[0]     # no positives: 0 rows, known
loss = F.smooth_l1_loss(x[pos], t[pos], beta=1 / 9, reduction="sum") + \
    F.l1_loss(x[pos], t[pos], reduction="sum")
loss.backward()
PY
$MEMSIM record --fake -o "$tmp/z.csv" -- "$PY" "$tmp/z.py" \
	>/dev/null 2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
n=$(awk -F, '$3 == "alloc" && $5 == 0' "$tmp/z.csv" | wc -l)
[ "$n" -eq 0 ] || fail "$n allocations of 0 bytes: $(awk -F, '$3 == "alloc" && $5 == 0 { print $8 }' "$tmp/z.csv" | sort -u | tr '\n' ';')"
$MEMSIM run "$tmp/z.csv" >/dev/null 2>"$tmp/err" || fail "run: $(cat "$tmp/err")"
# the 8x4 fp32 randn is still there
awk -F, '$3 == "alloc" && $5 == 128' "$tmp/z.csv" | grep -q . || fail "no 128-byte block for randn(8, 4)"
finish recorder_zero_bytes.sh
