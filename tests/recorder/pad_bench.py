"""A compiled model whose matmuls Inductor's pad_mm pass benchmarks at
compile time (tests/recorder_padmm.sh, docs/recording-compile.md).

A LayerNorm, then a Linear to 65 features (not a multiple of 4, the
alignment pad_mm asks of float32: torch._inductor.fx_passes.pad_mm's
get_alignment_size), on a batch of 768 x 128.  The first call runs under
no_grad (an inference graph: its addmm is benchmarked), the second trains
(the joint graph: the backward's mm, the weight's gradient, whose M is
65, is benchmarked; the forward's addmm has the inference graph's key and
is not).  The first kernel of each graph is a fused one (the LayerNorm),
so Triton's autotuner would make its L2-flush block before any cuBLAS
call if the compile benchmarked nothing.  Only the Linear's weight is
trained (the LayerNorm has no parameters, the bias is frozen): the
backward graph is that one mm, with no fused kernel for Triton to tune
on the autograd thread after its cuBLAS workspace (which kernels Triton
tunes is approximated, docs/recording-compile.md).

    python3 pad_bench.py [STEPS [bf16|nopad]]

With bf16, every call runs under torch.autocast (bfloat16, whose
alignment is 8: 65 columns padded to 72); with nopad, the model is
compiled with options={"shape_padding": False} (nothing benchmarked).
"""
import contextlib
import sys

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    bf16 = sys.argv[2:3] == ["bf16"]

    def amp():
        if bf16:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.LayerNorm(128, elementwise_affine=False),
        torch.nn.Linear(128, 65)).cuda()
    model[1].bias.requires_grad_(False)
    opt = torch.optim.SGD([model[1].weight], lr=0.1)
    nopad = sys.argv[2:3] == ["nopad"]
    cm = torch.compile(model, options={"shape_padding": False}
                       if nopad else None)
    x = torch.randn(768, 128, device="cuda")
    with torch.no_grad(), amp():
        y = cm(x)
    del y
    for _ in range(steps):
        with amp():
            loss = cm(x).float().square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    print("peaks", torch.cuda.max_memory_allocated(),
          torch.cuda.max_memory_reserved())


if __name__ == "__main__":
    main()
