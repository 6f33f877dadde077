#!/bin/sh
# memsim record --fake: the values the recorder knows survive
# masked_select's backward.  Its formula (masked_select_backward,
# FunctionsManual.cpp) scatters the gradient into zeros of the input's
# size with masked_scatter_, which dispatch._zeros_inplace runs in place
# under the fake mode; the value rules mirrored that write onto a clone of
# the zeros' values made with the mode still on the stack, a fake tensor
# kept as a "shadow", whose count at the next op (the neg of a
# label-smoothed loss, attention-is-all-you-need-pytorch's cal_loss) raised:
# every known value was forgotten (assumption values:lost), and a mask
# known before the backward (keep: 10 of 256 true) was counted by
# --dynamic-fraction (128 rows) instead of its values (10 rows, 2,560
# bytes).  The backward's masked_scatter_ into the zeros has its CUDA
# temporaries (kernels.masked_scatter: maskPrefixSum, cub's scan storage,
# the expanded gradient's contiguous copy).  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/m.csv" -- "$PY" "$SRC/recorder/masked_select_backward.py" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
cut -d, -f3,5,8 "$tmp/m.csv" | sed 1d >"$tmp/out"
N='index expandTensors mask.nonzero()'
cat >"$tmp/want" <<EOT
alloc,2048,masked_select_backward.py:3 <module>
alloc,256,masked_select_backward.py:3 <module>
free_completed,2048,
alloc,256,masked_select_backward.py:4 <module>
alloc,1024,masked_select_backward.py:5 <module>
alloc,1024,masked_select_backward.py:6 <module>
alloc,4,masked_select
alloc,1,masked_select
free_completed,1,
alloc,1024,masked_select
alloc,1023,masked_select
free_completed,1023,
free_completed,4,
alloc,512,masked_select_backward.py:6 <module>
free_completed,1024,
alloc,4,masked_select_backward.py:6 <module>
free_completed,512,
alloc,4,backward
alloc,1024,backward MaskedSelectBackward0
alloc,2048,masked_scatter_
alloc,1279,masked_scatter_
free_completed,1279,
alloc,512,masked_scatter_
free_completed,512,
free_completed,2048,
free_completed,1024,
alloc,1024,backward NegBackward0
free_completed,1024,
free_completed,4,
free_completed,4,
alloc,65536,masked_select_backward.py:7 <module>
alloc,4,$N
alloc,1,$N
free_completed,1,
alloc,80,$N
alloc,1023,$N
free_completed,1023,
free_completed,4,
alloc,2560,masked_select_backward.py:7 <module>
free_completed,80,
free_completed,65536,
EOT
cmp -s "$tmp/out" "$tmp/want" || fail "events: $(diff "$tmp/want" "$tmp/out" | head -20)"
grep -q 'values:lost' "$tmp/err" && fail "values lost: $(tail -1 "$tmp/err")"
finish recorder_masked_select_backward.sh
