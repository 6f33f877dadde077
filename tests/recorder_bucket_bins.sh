#!/bin/sh
# memsim record --fake: bucketize's and searchsorted's indices lie in 0 to
# the sequence's length, and a masked write of a tensor by a comparison
# of its own elements, unwritten since, with a constant (`b[b >= n] =
# n - 1`, masked_fill_) bounds the elements it leaves.  torch.ao's
# HistogramObserver on the GPU upscales its histogram so, then adds a
# bincount of minlength bins to it: the rules' bincount of one bin an
# element (32,768 of them against 2,048) stopped its forward ("Attempting
# to broadcast a dimension of length 32768"; kit r40b).  Needs Python 3
# and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/bucket_bins.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "bucketize 10" "searchsorted 6" "one side 8" "clamped 8" \
	"masked_fill 4" "other elements 10" "written since 10" \
	"histogram (2048,)"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_bucket_bins.sh
