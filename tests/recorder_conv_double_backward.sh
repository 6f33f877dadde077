#!/bin/sh
# memsim record --fake: the weight gradient of a convolution's double
# backward (a Hessian-vector product: torch.autograd.grad of gradients
# made with create_graph=True, as AdaHessian and PyHessian do) under
# cudnn.benchmark.  PyTorch's _convolution_double_backward computes it
# as at::convolution(ggI^T, gO^T): a forward convolution of batch and
# channels swapped whose filter is the output gradient's H x W and
# whose output the weight's 3x3 (kernels.fft_covers).  On the H200
# cudnn.benchmark's find of such a call had cuDNN's FFT engine
# (kernels.fft_forward, to the byte) as its largest candidate for
# filters of 32 and 16, and chose it for those of 32; the recording
# had the rules' plan (x + w + y) for both: AdaHessian's WRN-10-2 at
# batch 128, whose peak is a 280 MiB FFT workspace of a 32 -> 32
# layer's, was 16.3% low.  Here, batch 16, 32 -> 32 channels: the
# 32x32 filter's find and plan, 36,700,160 bytes each (the 2 MiB
# weight and 1024 tiles of 64 x 33 frequencies), and the 16x16
# filter's, 9,437,184 each (on the H100 such a layer's plan was the FFT
# too, tests/recorder_conv_hvp.sh; before, the rules').  Without
# cudnn.benchmark (cuDNN's heuristics: the rules' plan for PyHessian's
# ResNet-20 on the H200) both keep the rules' plan, the FFT noted as
# possible.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import sys
import torch
from torch import nn
torch.backends.cudnn.benchmark = sys.argv[1] == "1"
net = nn.Sequential(nn.Conv2d(3, 32, 1, bias=False), nn.Tanh(),
                    nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.Tanh(),
                    nn.Conv2d(32, 32, 3, stride=2, padding=1, bias=False),
                    nn.Tanh(),
                    nn.Conv2d(32, 32, 3, padding=1, bias=False)).cuda()
x = torch.randn(16, 3, 32, 32, device="cuda")
ps = list(net.parameters())
g = torch.autograd.grad(net(x).square().sum(), ps, create_graph=True)
v = [torch.randn_like(p) for p in ps]
torch.autograd.grad(g, ps, grad_outputs=v)
PY
ws() {	# the forward workspaces of SIZE bytes in recording $1
	awk -F, -v s="$2" '$3 == "alloc" && $5 == s &&
		$8 == "cudnn run_conv_plan workspace"' "$tmp/$1.csv" | wc -l |
		tr -d ' '
}
for b in 0 1; do
	(cd "$tmp" && $MEMSIM record --fake --device h200 -o "$tmp/b$b.csv" \
		-- "$PY" a.py $b) >"$tmp/err$b" 2>&1 ||
		fail "record $b: $(tail -3 "$tmp/err$b")"
done
# heuristics: the rules' plans, both filters' FFT an assumption
[ "$(ws b0 36700160) $(ws b0 9437184)" = "0 0" ] ||
	fail "heuristics: $(ws b0 36700160) FFT plans of the 32x32 filter, $(ws b0 9437184) of the 16x16"
grep -q "cudnn:fft-possible 2)" "$tmp/err0" ||
	fail "assumptions: $(grep assumption "$tmp/err0")"
# cudnn.benchmark: the find and the plan of each filter
[ "$(ws b1 36700160) $(ws b1 9437184)" = "2 2" ] ||
	fail "benchmark: $(ws b1 36700160) FFT workspaces of the 32x32 filter, $(ws b1 9437184) of the 16x16"
finish recorder_conv_double_backward.sh
