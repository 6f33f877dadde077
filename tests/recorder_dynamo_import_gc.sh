#!/bin/sh
# memsim record --fake: the script's first import of torch._dynamo
# (torch.optim's first optimizer, through torch._disable_dynamo) makes
# the full collection that the import's tens of thousands of objects
# set off in a real run, freeing the GPU tensors left in reference
# cycles; torch.manual_seed and making a module (whose wrappers import
# it only because the recorder did) do not (lifecycle.
# collect_at_dynamo_import).  The recorder imported torch._dynamo before
# the script began, so that collection never came: Torch-Pruning's
# reproduce/main.py (tp-groupnorm-vgg19) kept the model copies of
# count_ops_and_params to its end, +45% allocated.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
for v in "" "--values cpu"; do
	# shellcheck disable=SC2086
	$MEMSIM record --fake $v -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/dynamo_import_gc.py" \
		>"$tmp/err" 2>&1 || fail "record $v: $(tail -3 "$tmp/err")"
	for want in "freed before optimizer False" "freed after optimizer True"; do
		grep -qxF "$want" "$tmp/err" || fail "$v: '$want' not in: $(cat "$tmp/err")"
	done
	# the cycle's 16 MiB block is freed in the trace
	grep -q ',free[a-z_]*,[0-9]*,16777216,' "$tmp/a.csv" ||
		fail "$v: the 16 MiB block is not freed: $(cat "$tmp/a.csv")"
done
finish recorder_dynamo_import_gc.sh
