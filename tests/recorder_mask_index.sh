#!/bin/sh
# memsim record --fake: x[mask] with a bool mask on the GPU makes
# mask.nonzero() first, as index's structured meta does (make_info's
# expandTensors, IndexingUtils.h: nonzero_out_cuda's temporaries and an
# (n, mask.dim()) long output, a column an index; freed when index
# returns, after the result); its backward (IndexBackward0:
# _index_put_impl_ with accumulate, index_put_with_sort_kernel) takes it
# again in makeLinearIndex before the linear index, freed once that is
# made; x[mask] = values (values not one element) takes it in index_put_'s
# make_info.  Before, the recording had none of these for a mask of known
# values or unknown ones, and index's backward on a mask none of
# index_put_with_sort_kernel's temporaries (SimCLR's info_nce_loss
# indexes its similarity matrix by masks four times a step).  The sort's
# cub storage (82,431 bytes for 4,032 long keys and values) holds one
# look-back tile of 1 KiB, as the H100's sort of 4,096 longs in
# tests/data/record/unique_storage.real.txt.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/m.csv" -- "$PY" "$SRC/recorder/mask_index.py" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
cut -d, -f3,5,8 "$tmp/m.csv" | sed 1d >"$tmp/out"
N='index expandTensors mask.nonzero()'
S='index_put_with_sort_kernel temporaries'
P='index_put_ temporaries'
cat >"$tmp/want" <<EOT
alloc,16384,mask_index.py:9 <module>
alloc,4096,mask_index.py:10 <module>
alloc,4096,mask_index.py:10 <module>
free_completed,4096,
alloc,4,$N
alloc,1,$N
free_completed,1,
alloc,64512,$N
alloc,1023,$N
free_completed,1023,
free_completed,4,
alloc,16128,mask_index.py:11 <module>
free_completed,64512,
alloc,4,mask_index.py:12 <module>
alloc,4,backward
alloc,16384,backward IndexBackward0
alloc,4,$S
alloc,1,$S
free_completed,1,
alloc,64512,$S
alloc,1023,$S
free_completed,1023,
free_completed,4,
alloc,32256,$S
alloc,32256,$S
free_completed,32256,
alloc,32256,$S
alloc,32256,$S
free_completed,32256,
free_completed,32256,
free_completed,64512,
alloc,16128,$S
alloc,32256,$S
alloc,32256,$S
alloc,32256,$S
alloc,82431,$S
free_completed,82431,
free_completed,32256,
free_completed,32256,
free_completed,32256,
free_completed,16128,
free_completed,32256,
free_completed,4,
free_completed,4,
alloc,16384,mask_index.py:13 <module>
alloc,4096,mask_index.py:14 <module>
annotate,0,mask:random mask_index.py:14 =0.5
annotate,0,nonzero mask_index.py:14 =2048
alloc,4,$N
alloc,1,$N
free_completed,1,
alloc,32768,$N
alloc,1023,$N
free_completed,1023,
free_completed,4,
alloc,8192,mask_index.py:14 <module>
free_completed,32768,
free_completed,4096,
alloc,256,mask_index.py:16 <module>
alloc,4096,mask_index.py:16 <module>
alloc,4,$P
alloc,1,$P
free_completed,1,
alloc,1024,$P
alloc,1023,$P
free_completed,1023,
free_completed,4,
free_completed,1024,
free_completed,256,
free_completed,4096,
EOT
cmp -s "$tmp/out" "$tmp/want" || fail "events: $(diff "$tmp/want" "$tmp/out" | head -20)"
finish recorder_mask_index.sh
