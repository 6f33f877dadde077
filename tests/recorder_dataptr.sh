#!/bin/sh
# memsim record --fake: data pointers of CUDA tensors
# (Tensor.data_ptr, UntypedStorage.data_ptr) are the addresses of the
# recording's blocks (fake.py's Recorder.alloc): distinct storages have
# disjoint ranges, views and tied weights share theirs, as on the GPU.
# transformers' save_pretrained tells tied weights (a Trainer's
# checkpoints) by them; with every fake storage at 0 it took all the
# parameters of one size for tied ones and stopped.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/data_ptr.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "tied True" "distinct 4 of 5" "nonzero True" "view True True" \
	"disjoint True" "cpu True"; do
	grep -qx "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_dataptr.sh
