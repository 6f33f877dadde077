#!/bin/sh
# memsim record --fake: max_pool2d's CUDA kernel makes its input
# contiguous in its suggested layout (input_.contiguous(
# suggest_memory_format()) after the output and indices), a copy where
# the input is contiguous in neither (SAM 2's Hiera pools q, a strided
# view of its qkv projection: a 100 MB copy on the H100, which the
# recording lacked, -5.2% on the peak; now its peak to the byte); the
# backward copies input, grad_output and indices in the input's layout
# after grad_input.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
import torch.nn.functional as F
B, H, W, nH, C = 2, 32, 32, 2, 16
qkv = torch.randn(B, H * W, 3, nH, C, device="cuda", requires_grad=True)
q = torch.unbind(qkv, 2)[0].reshape(B, H, W, -1)
y = F.max_pool2d(q.permute(0, 3, 1, 2), 2)
y.sum().backward()
x = torch.randn(B, nH * C, H, W, device="cuda")
z = F.max_pool2d(x, 2)
print("ok")
PY
(cd "$tmp" && $MEMSIM record --fake -o a.csv -- "$PY" a.py) >"$tmp/out" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# forward: output 65,536 bytes, indices 131,072, the input's copy
# 262,144 (B*C*H*W floats); backward: grad_input 262,144, the input's
# copy 262,144, grad_output's (an expanded sum gradient) 65,536; the
# contiguous x of the second pool: no copy
got=$(awk -F, '$3 == "alloc" && $8 == "max_pool2d contiguous copy" { printf "%s ", $5 }' "$tmp/a.csv")
[ "$got" = "262144 262144 65536 " ] || fail "copies: '$got'"
finish recorder_maxpool_copy.sh
