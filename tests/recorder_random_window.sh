#!/bin/sh
# memsim record --fake (rules): draws shifted by known values (`arange(H)
# - centers`, centers random_(lo, hi)), compared with constants, are
# counted element by element (docs/recording-values.md, Values._shifted,
# _pred): each element of `lo <= d <= hi` true with the share of the
# draws' range that puts it there, two comparisons of the same d their
# intersection, two such masks of independent draws the product of their
# maps.  hlb-CIFAR10's make_random_square_masks: a 32 x 32 window of every
# 36 x 36 image (its batch_crop's masked_select(...).view(N, 3, 32, 32)
# needs the count to the element), a 3 x 3 one of 32 x 32 (its cutmix):
# 9 elements an image, not --dynamic-fraction's half.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
def squares(inputs, size):
    even = int(size % 2 == 0)
    shape = inputs.shape
    cy = torch.empty(shape[0], dtype=torch.long, device=inputs.device).random_(
        size // 2 - even, shape[-2] - size // 2 - even)
    cx = torch.empty(shape[0], dtype=torch.long, device=inputs.device).random_(
        size // 2 - even, shape[-1] - size // 2 - even)
    dy = torch.arange(shape[-2], device=inputs.device).view(1, 1, shape[-2], 1) - cy.view(-1, 1, 1, 1)
    dx = torch.arange(shape[-1], device=inputs.device).view(1, 1, 1, shape[-1]) - cx.view(-1, 1, 1, 1)
    my = (dy >= (-(size // 2) + even)) * (dy <= size // 2)
    mx = (dx >= (-(size // 2) + even)) * (dx <= size // 2)
    return my * mx
x = torch.randn(256, 3, 36, 36, device="cuda", dtype=torch.half)
m = squares(x, 32)
print("crop", torch.masked_select(x, m).view(256, 3, 32, 32).shape[0],
      m.sum().item())
y = torch.randn(256, 3, 32, 32, device="cuda")
m3 = squares(y, 3)
print("cutmix", m3.sum().item(), y[m3.expand_as(y)].numel())
r = torch.rand(100, device="cuda")
print("continuous", ((torch.arange(4, device="cuda").view(4, 1) * 0.25 + r) < 0.5).sum().item())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# 256 images of 32 x 32 (x 3 channels: 786,432 selected); 256 x 9 of the
# 3 x 3 window, 6,912 of three channels; k/4 + rand < 0.5 for k = 0..3:
# 1/2, 1/4, 0, 0 of 100 each: 75
want="crop 256 262144
cutmix 2304 6912
continuous 75"
got=$(grep -v '^memsim record' "$tmp/err")
[ "$got" = "$want" ] || fail "counts: $(echo "$got" | tr '\n' '|')"
finish recorder_random_window.sh
