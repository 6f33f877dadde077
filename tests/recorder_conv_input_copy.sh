#!/bin/sh
# memsim record --fake, a 2-d or 3-d convolution of an input dense in
# neither layout (permuted, or a slice across the channels): _convolution
# hands the cuDNN backend input.contiguous(backend_memory_format), a copy
# made before the output and freed when the op returns (Aurora's patch
# embedding: conv3d over a batch rearranged "b t v h w -> b v t h w").
# The recording had the copy for 1-d convolutions only.  Skips (77)
# without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/conv.py" <<'PY'
import torch
import torch.nn.functional as F
x = torch.randn(1, 2, 4, 64, 64, device="cuda").permute(0, 2, 1, 3, 4)
w = torch.randn(256, 4, 2, 4, 4, device="cuda")
y = F.conv3d(x, w, None, stride=(2, 4, 4))
x2 = torch.randn(1, 4, 2, 64, 64, device="cuda").permute(0, 1, 2, 4, 3)
y2 = F.conv2d(x2[:, :, 0], w[:, :, 0], None, stride=4)
x3 = torch.randn(1, 4, 64, 64, device="cuda")
y3 = F.conv2d(x3, w[:, :, 0].contiguous(), None, stride=4)
PY
(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o conv.csv -- "$PY" conv.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# x, w; conv3d: the copy of x (4 x 2 x 64 x 64 fp32), its output, the
# copy freed; x2; conv2d of a slice of x2 transposed: the copy of the
# slice (4 x 64 x 64), the output, the copy freed; x3, w's contiguous
# slice made contiguous, conv2d of a contiguous input: its output alone,
# then the temporary weight freed
got=$(awk -F, 'NR > 1 { printf "%s%s ", $3 == "alloc" ? "+" : "-", $5 }' "$tmp/conv.csv")
want="+131072 +131072 +131072 +262144 -131072 +131072 +65536 +262144 -65536 +65536 +65536 +262144 -65536 "
[ "$got" = "$want" ] || fail "requests: $got, want $want"
grep -q ",cudnn convolution input contiguous copy" "$tmp/conv.csv" ||
	fail "the copies' site"
finish recorder_conv_input_copy
