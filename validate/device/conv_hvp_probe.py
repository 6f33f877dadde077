"""Device probe for a Hessian-vector product's convolutions (helper
d52a, kernels.fft_covers): which of them cuDNN runs by its FFT engine.
PyHessian's ResNet-20 at batch 100 (no cudnn.benchmark) had, on the
H200, the FFT's workspace (kernels.fft_weight) in the backward-weight of
the forward graph's ConvolutionBackward0 (3x3, 16 -> 16 at 32x32, 32 ->
32 at 16x16; not 64 -> 64 at 8x8), while the double backward's weight
gradient (at::convolution(ggI^T, gO^T), a filter covering its input)
took the rules' plan; AdaHessian (cudnn.benchmark, batch 128) the
reverse.  For each layer (batch N, C -> K channels, H x H, 3x3, padding
1) and each mode (heuristics; cudnn.benchmark, a thread of its own so
that each find is the first), the allocations of: W, the backward-weight
(torch.ops.aten.convolution_backward, weight only); G, the covering
convolution (conv2d of the transposed input gradient and output
gradient, as _convolution_double_backward calls it), each with the FFT
rule's bytes.  Prints one line a call; writes OUT.json.
  python3 conv_hvp_probe.py OUT.json [SECONDS]"""
import os
import sys
import threading
import time
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "traces"))
from memsim_record import kernels  # noqa: E402
from probewin import begin, start, window, save  # noqa: E402

out, budget, t0 = begin(240.0)
layers = []
for n in (100, 128, 96, 64):
    for c, h in ((16, 32), (32, 32), (32, 16), (64, 16), (64, 8), (128, 8)):
        layers.append((n, c, c, h))
for n, c, k, h in ((100, 3, 16, 32), (128, 16, 32, 32), (100, 16, 32, 32)):
    layers.append((n, c, k, h))
res = []


def one(n, c, k, h, bench, row):
    try:
        calls(n, c, k, h, bench, row)
    except Exception as e:
        row["error"] = str(e)[:200]


def calls(n, c, k, h, bench, row):
    torch.backends.cudnn.benchmark = bench
    x = torch.randn(n, c, h, h, device="cuda")
    w = torch.randn(k, c, 3, 3, device="cuda")
    go = torch.randn(n, k, h, h, device="cuda")
    start()
    torch.ops.aten.convolution_backward(go, x, w, None, [1, 1], [1, 1],
                                        [1, 1], False, [0, 0], 1,
                                        [False, True, False])
    row["W"] = [r[0] for r in window(2) if r[1]]
    row["W_fft"] = kernels.fft_weight((n, c, h, h), (k, c, 3, 3), (1, 1))
    ggit = torch.randn(n, c, h, h, device="cuda").transpose(0, 1)
    got = go.transpose(0, 1).contiguous()
    start()
    F.conv2d(ggit, got, padding=1)
    row["G"] = [r[0] for r in window(2) if r[1]]
    row["G_fft"] = kernels.fft_forward((c, n, h, h), (k, n, h, h), (1, 1))


for (n, c, k, h) in layers:
    for bench in (False, True):
        if time.time() - t0 > budget:
            break
        row = {"n": n, "c": c, "k": k, "h": h, "benchmark": bench}
        th = threading.Thread(target=one, args=(n, c, k, h, bench, row))
        th.start()
        th.join()
        res.append(row)
        print(row, flush=True)
        torch.cuda.empty_cache()
save(out, res, t0)
