#!/bin/sh
# binary_cross_entropy_with_logits' temporaries under memsim record
# --fake: ATen's composite kernel (Loss.cpp) makes log_sigmoid(input) and
# the elementwise loss (1 - target) * input - log_sigmoid before the
# reduced output and frees them after it, in the order lightning's GAN
# showed on the H200; with reduction "none" the loss is the output, and
# pos_weight adds (pos_weight - 1) and log_weight, freed before the loss
# is made.  Needs PyTorch; skips (77) without it.
set -u
MEMSIM=${MEMSIM:-./memsim}
PY=${MEMSIM_PYTHON:-python3}
"$PY" -c 'import torch' 2>/dev/null || { echo "no torch: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/memsim-bce-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cat >"$tmp/bce.py" <<'PY'
import torch
import torch.nn.functional as F
x = torch.randn(32, 1, device="cuda")
t = torch.ones(32, 1, device="cuda")
F.binary_cross_entropy_with_logits(x, t)
pw = torch.ones(1, device="cuda")
F.binary_cross_entropy_with_logits(x, t, reduction="none", pos_weight=pw)
PY
$MEMSIM record -o "$tmp/bce.csv" -- "$PY" "$tmp/bce.py" 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
# rows after the inputs (x, t) and until pw: the mean's; after pw: none's
got=$(awk -F, 'NR > 3 { print $3 ":" $5 ":" $7 }' "$tmp/bce.csv" | tr '\n' ' ')
want="alloc:128:temporary alloc:128:temporary alloc:4:other free_completed:128: free_completed:128: free_completed:4: alloc:4:input alloc:128:temporary alloc:4:temporary alloc:128:temporary free_completed:4: free_completed:128: alloc:128:other free_completed:128: "
case "$got" in
"$want"*) ;;
*) fail "rows: $got" ;;
esac
[ "$fails" -eq 0 ] || exit 1
echo "recorder bce: ok"
