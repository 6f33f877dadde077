"""F.ctc_loss on the GPU, forward and backward: ATen's own kernels
(int64 targets on the GPU, lengths as host tensors; reductions;
zero_infinity; a problem large enough for the blanks' logsumexp, 2*T +
2.4*batch + 0.2*classes > 450; cuDNN's targets with cuDNN off).  Prints
what the H200 prints: each call's allocated bytes after the forward,
after the backward, and the peak, above the start.  "cudnn" asks for
cuDNN's CTC (int32 targets on the host, every input full length)."""
import sys

import torch
import torch.nn.functional as F


def run(tag, T, B, C, S, cudnn, **kw):
    torch.manual_seed(0)
    lp = torch.randn(T, B, C, device="cuda").log_softmax(2).detach()
    lp.requires_grad_()
    if cudnn:
        tg = torch.randint(1, C, (B * S,), dtype=torch.int32)
        il, tl = [T] * B, [S] * B
    else:
        tg = torch.randint(1, C, (B, S), device="cuda")
        il = torch.full((B,), T, dtype=torch.long)
        tl = torch.randint(S // 2, S + 1, (B,), dtype=torch.long)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    loss = F.ctc_loss(lp, tg, il, tl, **kw)
    f = torch.cuda.memory_allocated() - base
    loss.backward()
    print(tag, f, torch.cuda.memory_allocated() - base,
          torch.cuda.max_memory_allocated() - base, flush=True)


if sys.argv[1:] == ["cudnn"]:
    run("cudnn", 100, 8, 32, 20, True)
    sys.exit(0)
run("small", 50, 4, 20, 10, False)
run("small-sum", 50, 4, 20, 10, False, reduction="sum")
run("sum-zero-inf", 50, 4, 20, 10, False, reduction="sum", zero_infinity=True)
run("large", 300, 16, 500, 60, False)
run("large-zero-inf", 300, 16, 500, 60, False, zero_infinity=True)
with torch.backends.cudnn.flags(enabled=False):
    run("cudnn-off", 100, 8, 32, 20, True)
