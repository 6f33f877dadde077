#!/bin/sh
# A packed sequence (pack_padded_sequence) into a cuDNN nn.LSTM / nn.GRU
# under memsim record (traces/memsim_record/rnn.py): _cudnn_rnn with
# batch_sizes, as for padded input but for the shapes
# (TensorDescriptorListParams): seq_length = len(batch_sizes) steps of
# mini_batch = batch_sizes[0] rows, the output batch_sizes_sum rows;
# cudnnGetRNNTempSpaceSizes takes the descriptor's maxSeqLength and
# batchSize, so the workspace and reserve are those of the padded T x B.
# Before, a packed input went to PyTorch's per-step cells (matmuls, no
# workspace or reserve: DeepCTR's DIEN 11% low).  And the weights'
# gradients, views of the dw buffer _cudnn_rnn_backward_weight zero-fills,
# were taken for known zeros (a gradient's norm read 0).  Skips (77)
# without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=$SRC/recorder/rnn_packed.py
count() { awk -F, -v s="$1" -v site="$2" '$3 == "alloc" && $5 == s &&
	$8 == site { n++ } END { print n + 0 }' "$3"; }
for c in lstm gru; do
	$MEMSIM record --fake -o "$tmp/$c.csv" -- "$PY" "$script" $c \
		>"$tmp/$c.out" 2>&1 || fail "record $c: $(tail -3 "$tmp/$c.out")"
	# the output: 8+5+3+1 = 17 rows of D*H = 64 floats
	[ "$(awk -F, '$3 == "alloc" && $5 == 4352' "$tmp/$c.csv" | wc -l)" -ge 1 ] ||
		fail "$c: no packed output of 17 x 64 floats"
	grep -q 'cuBLAS workspace' "$tmp/$c.csv" && fail "$c: per-step cells (cuBLAS)"
	grep -q '^grad 0\.00000$' "$tmp/$c.out" && fail "$c: gradients known zero"
	# --values cpu: the values of the same program run on the host
	$MEMSIM record --values cpu -o "$tmp/$c.v.csv" -- "$PY" "$script" $c \
		>"$tmp/$c.v.out" 2>&1 || fail "record --values cpu $c: $(tail -3 "$tmp/$c.v.out")"
	"$PY" "$script" $c cpu >"$tmp/$c.cpu" 2>&1 || fail "$c on the CPU: $(tail -3 "$tmp/$c.cpu")"
	for k in out grad; do
		want=$(grep "^$k " "$tmp/$c.cpu")
		grep -qxF "$want" "$tmp/$c.v.out" || fail "$c --values cpu: '$want' not in $(grep -v memsim "$tmp/$c.v.out")"
	done
done
# The workspace (rnn.py, the small-H rule): 2 layers x 2 directions x
# 8 MiB + the weight space (151552 bytes LSTM, 113664 GRU) + the
# sequence term B*1.5*s*(T*a*H + c*H) at T = 8, B = 4 (a, c: 21.51, 8.24
# LSTM; 19.35, 6.02 GRU): forward, backward-data and backward-weight
# each.  The reserve T*B*D*H*s*(c*L - 1) + 256 (c = 6 LSTM, 7 GRU).
[ "$(count 33844469 "cudnn _cudnn_rnn workspace" "$tmp/lstm.csv")" -eq 1 ] &&
	[ "$(count 33844469 "cudnn _cudnn_rnn_backward_input workspace" "$tmp/lstm.csv")" -eq 1 ] &&
	[ "$(count 33844469 "cudnn _cudnn_rnn_backward_weight workspace" "$tmp/lstm.csv")" -eq 1 ] ||
	fail "lstm: workspaces $(grep 'workspace' "$tmp/lstm.csv")"
[ "$(awk -F, '$3 == "alloc" && $5 == 90368' "$tmp/lstm.csv" | wc -l)" -eq 1 ] ||
	fail "lstm: no reserve of 90368 bytes"
[ "$(count 33791605 "cudnn _cudnn_rnn workspace" "$tmp/gru.csv")" -eq 1 ] ||
	fail "gru: workspace $(grep '_cudnn_rnn workspace' "$tmp/gru.csv")"
[ "$(awk -F, '$3 == "alloc" && $5 == 106752' "$tmp/gru.csv" | wc -l)" -eq 1 ] ||
	fail "gru: no reserve of 106752 bytes"
finish recorder_rnn_packed.sh
