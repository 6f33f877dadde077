#!/bin/sh
# memsim record --fake: an uninitialized tensor written part by part
# with known values has those values once every element is written
# (Values._blank).  Ultralytics' loss makes its targets so: a zeros
# tensor filled from the batch's boxes, then xywh2xyxy's `y =
# empty_like(x); y[..., :2] = xy - wh; y[..., 2:] = xy + wh`; the boxes
# then decide which objects are padding (`mask_gt`), and the count of
# each image's positive anchors is bounded by them.  Before, the
# empty_like's values were never had: mask_gt's count was half its
# elements (--dynamic-fraction), the assigner's bound 10 anchors for
# each padded object too (YOLO11-seg +14.5% peak allocated).  A blank
# tensor written only in part, or with unknown values, stays unknown.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch


def xywh2xyxy(x):
    y = torch.empty_like(x)
    xy = x[..., :2]
    wh = x[..., 2:] / 2
    y[..., :2] = xy - wh
    y[..., 2:] = xy + wh
    return y


dev = "cuda" if torch.cuda.is_available() else "cpu"
g = torch.Generator().manual_seed(0)
img = torch.tensor([0, 0, 0, 1, 2, 2, 3, 3, 3, 3, 3, 3, 3.])
t = torch.cat((img.view(-1, 1), torch.zeros(13, 1),
               torch.rand(13, 4, generator=g) + 0.1), 1).to(dev)
i = t[:, 0]
_, counts = i.unique(return_counts=True)
out = torch.zeros(5, int(counts.max()), 5, device=dev)
for j in range(5):
    m = i == j
    if n := m.sum():
        out[j, :n] = t[m, 1:]
out[..., 1:5] = xywh2xyxy(out[..., 1:5].mul_(torch.full((4,), 320.,
                                                       device=dev)))
mask_gt = out[..., 1:5].sum(2, keepdim=True).gt_(0.0)
print("objects", mask_gt.nonzero().shape[0])
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "recording: $(tail -3 "$tmp/err")"
# the 13 objects of 4 images (the fifth has none), as on a CPU
(cd "$tmp" && "$PY" a.py) >"$tmp/cpu" 2>&1 || fail "on the CPU: $(cat "$tmp/cpu")"
grep -qxF "objects 13" "$tmp/cpu" || fail "CPU run: $(cat "$tmp/cpu")"
grep -qxF "objects 13" "$tmp/err" || fail "objects: $(cat "$tmp/err")"
# no rule was needed for either (nonzero: a count from the rules)
$MEMSIM info "$tmp/a.csv" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
grep -q 'nonzero' "$tmp/info" && fail "a count assumed: $(grep nonzero "$tmp/info")"
# a blank tensor written in part, or with values not had, stays unknown:
# each count is the rule's, half the 24 elements (8 would be the
# written ones alone)
cat >"$tmp/b.py" <<'PY'
import torch
half = torch.empty(4, 6, device="cuda")
half[:, :2] = 1.0
print("half", half.nonzero().shape[0])
unknown = torch.empty(4, 6, device="cuda")
unknown[:, :2] = 1.0
unknown[:, 2:] = torch.randn(4, 4, device="cuda")
print("unknown", unknown.nonzero().shape[0])
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/b.csv" -- "$PY" b.py) \
	>"$tmp/err" 2>&1 || fail "recording b: $(tail -3 "$tmp/err")"
grep -qxF "half 12" "$tmp/err" || fail "half: $(cat "$tmp/err")"
grep -qxF "unknown 12" "$tmp/err" || fail "unknown: $(cat "$tmp/err")"
finish recorder_blank.sh
