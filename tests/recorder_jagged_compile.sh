#!/bin/sh
# memsim record --fake of a jagged nested tensor through torch.compile
# (pytorch/tutorials' transformer_building_blocks.py compiles its
# MultiHeadAttention over one, kit r40d): the tensor's cached minimum and
# maximum lengths are CPU tensors of shape (n, 0), real under the recorder
# beside its fake values, and Dynamo's is_fake() refused the subclass
# ("got mixed fake and real tensors!"); and AOTAutograd rebuilds a
# compiled graph's nested output with -1 for its ragged size, which
# NestedTensor.__tensor_unflatten__ took as the size of fake offsets
# (numel: integer multiplication overflow).  fake.py's
# _patch_jagged_compile: the lengths are made fakes of the values' mode
# when the subclass is flattened, and offsets of the recorder's mode get
# their own nested int, as real offsets do (get_tensor_symint).
# tests/recorder/jagged_compile.py mlp: Linear, GELU, Linear compiled,
# two forwards and backwards.  Needs PyTorch; skips (77) without.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/jagged_compile.py
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/j.csv" -- "$PY" "$script" mlp) \
	>"$tmp/err" 2>&1 || { fail "record: $(tail -3 "$tmp/err")"; finish recorder_jagged_compile.sh; }
grep -q "^done" "$tmp/err" || fail "the script did not run to its end"
# the output's ragged size is the input's nested int, as in a run
[ "$(grep -c "ragged size kept: True (507, 256)" "$tmp/err")" = 2 ] ||
	fail "ragged size: $(grep "ragged size" "$tmp/err")"
$MEMSIM info "$tmp/j.csv" 2>/dev/null | grep -q "compile:inductor jagged_compile.py" ||
	fail "not recorded as compiled"
finish recorder_jagged_compile.sh
