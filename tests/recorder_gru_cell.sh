#!/bin/sh
# memsim record --fake: nn.GRUCell on a CUDA input runs the two gate
# GEMMs and then _thnn_fused_gru_cell, whose CUDA kernel has no fake
# (meta) kernel, nor has its backward (the recording stopped there:
# lucidrains' compressive-transformer gates every residual with a
# GRUCell).  RNN.cu's _thnn_fused_gru_cell_cuda
# makes a workspace of hx's rows x 5 * hidden (kept by autograd for the
# backward) and then hy; _thnn_fused_gru_cell_backward_cuda makes
# grad_input_gates and grad_hidden_gates (rows x 3 * hidden), grad_hx
# and, with biases, each gates' gradient summed over the rows.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
cell = torch.nn.GRUCell(64, 256).cuda()
x = torch.randn(32, 64, device="cuda")
h = cell(x)
h.sum().backward()
cell2 = torch.nn.GRUCell(64, 128, bias=False).cuda()
h2 = cell2(x[:16], torch.zeros(16, 128, device="cuda"))
h2.sum().backward()
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $8 ~ /GRUCell|GruCell/ && $7 != "parameter" {
	printf "%s%s", s, $5; s = " " } END { print "" }' "$tmp/a.csv")
# GRUCell(64, 256), 32 rows, fp32: hx = zeros (32*256*4), the input and
# hidden gates (32*768*4 each), the workspace (32*1280*4), hy; backward:
# the two gates' gradients, grad_hx, the two bias gradients (768*4).
# GRUCell(64, 128) without biases, 16 rows and its hx given: gates
# (16*384*4), workspace (16*640*4), hy; backward: no bias gradients.
want="32768 98304 98304 163840 32768 98304 98304 32768 3072 3072"
want="$want 24576 24576 40960 8192 24576 24576 8192"
[ "$got" = "$want" ] || fail "allocations: $got"
finish recorder_gru_cell.sh
