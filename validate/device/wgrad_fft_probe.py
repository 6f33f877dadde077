"""Where cuDNN's heuristics (cudnn.benchmark off) take the FFT engine for
fp32 NCHW 3x3 convolutions (kernels.fft_weight_chosen's region): each
phase's workspace, the peak of requested bytes inside the call less its
output, over a grid of batch, channels in and out, side and stride.  Rows
whose weight column equals kernels.fft_weight() ran the FFT.
  python3 wgrad_fft_probe.py > OUT.txt
Each line: N C K H stride forward data weight (bytes).  Run on an H100
(2026-12-07): tests/data/record/conv_wgrad_fft.tsv, the region refitted
on it (16 -> 16 at 32 x 32 from 64 images the FFT, as PyHessian's
ResNet-20 at 100 images on the H200; Torch-Pruning's ResNet-56 at 64
seemed not to take it there, by its reserved peak: run this on an H200
to tell the two GPUs apart)."""
import itertools
import torch

torch.backends.cudnn.benchmark = False
bwd = torch.ops.aten.convolution_backward


def stat(key):
    return torch.cuda.memory_stats()["requested_bytes.all." + key]


def ws(fn, out_bytes):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = stat("current")
    r = fn()
    torch.cuda.synchronize()
    peak = stat("peak")
    del r
    return peak - before - out_bytes


print("#", torch.__version__, torch.backends.cudnn.version(),
      torch.cuda.get_device_name(), flush=True)
for n, c, k, h, s in itertools.product((16, 32, 64, 96, 100, 128, 256),
                                       (16, 32, 64, 128),
                                       (16, 32, 64, 128),
                                       (4, 8, 16, 32), (1, 2)):
    x = torch.randn(n, c, h, h, device="cuda")
    w = torch.randn(k, c, 3, 3, device="cuda")
    y = torch.nn.functional.conv2d(x, w, None, s, 1)
    g = torch.randn_like(y)
    a = ([s, s], [1, 1], [1, 1], False, [0, 0], 1)
    f = ws(lambda: torch.nn.functional.conv2d(x, w, None, s, 1),
           y.numel() * 4)
    d = ws(lambda: bwd(g, x, w, None, *a, [True, False, False]),
           x.numel() * 4)
    q = ws(lambda: bwd(g, x, w, None, *a, [False, True, False]),
           w.numel() * 4)
    print(n, c, k, h, s, f, d, q, flush=True)
