#!/bin/sh
# memsim record --fake: a mask whose true elements are counted (sum,
# nonzero, boolean indexing) with unknown values got --dynamic-fraction
# of its elements (0.5), even where the ops that built it bound the
# count far lower.  Ultralytics' TaskAlignedAssigner scatters ones at
# each object's top-10 anchor indices into zeros of (batch, objects,
# anchors), masks, multiplies and sums over the objects: at most 10
# anchors an object are foreground, and the segmentation loss allocates
# a (foreground anchors, 160, 160) mask for each image; the half of
# 8,400 anchors made YOLO11-seg's peak twice the H200's.  Now every
# count is at most Values.nonzero_bound: scatters add one element an
# index, casts, products and reductions over a dimension keep it, a
# masked_fill_ with 0 and a mul_ keep the storage's.  Here: 4 images, 3
# objects, 8,400 anchors, top 10: 120 foreground anchors at most (the
# H200 found 120: distinct random top-10s), not 16,800.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
torch.manual_seed(0)
b, n, A, k = 4, 3, 8400, 10
metrics = torch.rand(b, n, A, device="cuda")
_, idx = torch.topk(metrics, k, dim=-1)
count = torch.zeros(metrics.shape, dtype=torch.int8, device="cuda")
ones = torch.ones_like(idx[:, :, :1], dtype=torch.int8)
for j in range(k):
    count.scatter_add_(-1, idx[:, :, j:j + 1], ones)
count.masked_fill_(count > 1, 0)
in_gts = torch.rand(b, n, A, device="cuda") > -1.0
mask_pos = count.to(metrics.dtype) * in_gts * torch.ones(b, n, 1, device="cuda")
fg = mask_pos.sum(-2).bool()
print("sum", int(fg.sum()))
x = torch.randn(b, A, 64, device="cuda")
print("index", x[fg].shape[0])
print("nonzero", torch.nonzero(mask_pos).shape[0])
print("select", torch.masked_select(x[:, :, 0], fg).shape[0])
free = torch.rand(b, A, device="cuda") > 0.5
print("free", int(free.sum()))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "sum 120" "index 120" "nonzero 120" "select 120" "free 16800"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
# Each row's bound: a scatter along the last dimension writes at most
# the index's last size into each row (10 here), and a product with a
# factor that is constant along the rows (size 1 there) is nonzero only
# in the rows where that factor is.  Ultralytics pads each image's
# objects to the most any image has; the padded rows' mask_gt is 0,
# their top-10 indices all 0 (masked_fill_), their counts 10 at one
# anchor, filtered to 0: 6 real objects here, at most 60 anchors (the
# H200 found 60), not 10 for each of the 12 rows.
cat >"$tmp/c.py" <<'PY'
import torch
torch.manual_seed(0)
b, n, A, k = 4, 3, 8400, 10
gt = torch.zeros(b, n, 4)
for i, m in enumerate((3, 1, 2, 0)):
    gt[i, :m] = torch.rand(m, 4) + 0.1
gt_bboxes = gt.to("cuda")
mask_gt = gt_bboxes.sum(2, keepdim=True).gt_(0.0)
metrics = torch.rand(b, n, A, device="cuda")
topk_mask = mask_gt.expand(-1, -1, k).bool()
_, idx = torch.topk(metrics, k, dim=-1)
idx.masked_fill_(~topk_mask, 0)
count = torch.zeros(metrics.shape, dtype=torch.int8, device="cuda")
ones = torch.ones_like(idx[:, :, :1], dtype=torch.int8)
for j in range(k):
    count.scatter_add_(-1, idx[:, :, j:j + 1], ones)
count.masked_fill_(count > 1, 0)
mask_topk = count.to(metrics.dtype)
in_gts = torch.rand(b, n, A, device="cuda") > -1.0
mask_pos = mask_topk * in_gts * mask_gt
print("nonzero", torch.nonzero(mask_pos).shape[0])
print("fg", int(mask_pos.sum(-2).bool().sum()))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/c.csv" -- "$PY" c.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "nonzero 60" "fg 60"; do
	grep -qxF "$want" "$tmp/err" || fail "padded rows: '$want' not in: $(cat "$tmp/err")"
done
# A row bound is its storage's rows': a transpose's rows are the
# columns.  Ones scattered at index 0 of each of 300 rows (at most 1 a
# row) make column 0 all ones: row 0 of the transpose has 300, not 1.
cat >"$tmp/d.py" <<'PY'
import torch
A = 300
idx = torch.zeros(A, 1, dtype=torch.long, device="cuda")
m = torch.zeros(A, A, device="cuda")
m.scatter_(-1, idx, 1.0)
c = torch.zeros(A, 1, device="cuda")
c[0] = 1.0
print("transposed", int((m.mT * c).bool().sum()))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/d.csv" -- "$PY" d.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
grep -qxF "transposed 300" "$tmp/err" || fail "a transpose's rows: $(grep transposed "$tmp/err")"
# A bound is kept under its storage's id while the storage lives: a
# fake CPU tensor's (`.cpu()` of a known one, before the host has its
# values) died unreported, and a CUDA storage given its id later took
# its bound (0 here: the count of 64 uniform draws above 0.5 came out 0;
# llama2.c's rotary table bounded an RMSNorm's mean, a guard on the
# batch size under --symbolic).
cat >"$tmp/b.py" <<'PY'
import torch
n = set()
for i in range(200):
    z = torch.zeros(64, device="cuda")
    c = z.cpu()
    del c, z
    x = torch.rand(64, device="cuda")
    n.add(int((x > 0.5).sum()))
print("counts", sorted(n))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/b.csv" -- "$PY" b.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
grep -qxF "counts [32]" "$tmp/err" || fail "a dead storage's bound: $(grep counts "$tmp/err")"
finish recorder_nonzero_bound.sh
