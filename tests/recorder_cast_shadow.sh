#!/bin/sh
# A cast of a GPU tensor whose values the recording has (a shadow) to one
# too large for a shadow of its own keeps them for the host, as a copy
# from the host does (Values._upload): yolov5's segment/val.py moves a
# batch's uint8 masks to the GPU (16 x 80 x 80, a shadow under
# INDEX_LIMIT), casts them with .float() (over SHADOW_LIMIT: no shadow)
# and its plot reads them back with .cpu().numpy(), telling overlapping
# masks by max() > 1.  The read got the --fake default (1.0 everywhere),
# the plot took the masks for non-overlapping and indexed them with the
# boxes' mask (IndexError in its thread).  A write to the cast tensor
# drops the values as for any upload.  Under inference_mode (yolov5's
# validation) the shadow has no version counter: the values are a copy,
# and every other tensor's stay known (no values:lost).  Skips (77)
# without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/cs.py" <<'PY'
import torch
m = torch.zeros(16, 80, 80, dtype=torch.uint8)
m[0, :5, :5] = 3
m[1, 10:20, :] = 2
g = m.to("cuda").float()                   # 102400 floats: no shadow
a = g.cpu().numpy()
print("max", a.max(), "sum", int(a.sum()))
g.mul_(2)                                  # written: unknown again
print("after", g.cpu().numpy().max() < 1.5)   # (host:spread's, not 6)
t = torch.tensor([[0.0, 1], [1, 1], [2, 0]]).cuda()
with torch.inference_mode():               # yolov5's validation
    h = m.to("cuda").float()
    print("inference", h.cpu().numpy().max())
    print("counts", [int((t[:, 0] == i).sum()) for i in range(3)])
PY
$MEMSIM record --fake -o "$tmp/cs.csv" -- "$PY" "$tmp/cs.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "values:lost" "$tmp/out" && fail "values lost: $(grep values:lost "$tmp/out")"
for want in "max 3.0 sum 1675" "after True" "inference 3.0" "counts [1, 1, 1]"; do
	grep -qxF "$want" "$tmp/out" || fail "'$want' not in: $(cat "$tmp/out")"
done
finish recorder_cast_shadow.sh
