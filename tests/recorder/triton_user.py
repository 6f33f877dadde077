"""A program's own Triton kernels (the way Triton's tutorials and
kernel libraries write them): an elementwise kernel launched as
kernel[grid](...) inside an autograd.Function, an autotuned kernel whose
autotuner restores an argument it writes (restore_value), and
triton.testing.do_bench.  Prints the peaks at the end.

    python3 triton_user.py [plain|tuned|bench|benchgrad|compiled|device|warmup]

benchgrad times a forward and backward with do_bench(grad_to_none=...),
as Liger-Kernel's benchmarks do: the gradient accumulates across the
untimed calls and is dropped before each timed one.

compiled calls the kernel inside a torch.compile'd function (Dynamo's
triton_kernel_wrapper: its analysis of what the kernel writes needs
the compile target).  device asks Triton's driver for the torch device
and the SM count, as Triton's tutorials and persistent kernels do.
warmup compiles a kernel ahead of its launch (JITFunction.warmup) for its
register count, which only the GPU's compiler knows.
"""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * s, mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}),
                          triton.Config({"BLOCK": 1024})],
                 key=["n"], restore_value=["acc_ptr"])
@triton.jit
def accumulate_kernel(acc_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(acc_ptr + offs, mask=m)
    tl.store(acc_ptr + offs, a + tl.load(x_ptr + offs, mask=m), mask=m)


def scale(x, s):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](
        x, out, n, s, BLOCK=1024)
    return out


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        return scale(x, s)

    @staticmethod
    def backward(ctx, g):
        # (the kernel reads n elements: a sum's gradient is expanded)
        return scale(g.contiguous(), ctx.s), None


def main(mode):
    dev = "cuda"
    torch.manual_seed(0)
    mib = 1 << 20
    if mode == "plain":
        lin = torch.nn.Linear(1024, 1024, device=dev)
        opt = torch.optim.AdamW(lin.parameters())
        for _ in range(3):
            x = torch.randn(4096, 1024, device=dev)
            y = Scale.apply(lin(x), 0.5)
            y.sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    elif mode == "tuned":
        acc = torch.zeros(32 * mib, device=dev)  # 128 MiB
        for _ in range(2):
            x = torch.randn(32 * mib, device=dev)
            accumulate_kernel[lambda meta: (
                triton.cdiv(acc.numel(), meta["BLOCK"]),)](acc, x, acc.numel())
            del x
    elif mode == "compiled":
        @torch.compile
        def f(x):
            return scale(torch.relu(x) + 1, 2.0) * 3
        x = torch.randn(4096, 4096, device=dev)
        for _ in range(2):
            z = f(x)
        del z
    elif mode == "device":
        from triton.runtime import driver
        d = driver.active.get_active_torch_device()
        sms = driver.active.utils.get_device_properties(d.index)[
            "multiprocessor_count"]
        x = torch.randn(sms * 1024 * 16, device=d)     # 16 rows an SM
        print("SMs", sms, scale(x, 2.0).shape)
    elif mode == "warmup":
        x = torch.randn(mib, device=dev)
        k = scale_kernel.warmup(x, torch.empty_like(x), x.numel(), 2.0,
                                BLOCK=1024, grid=(1,))
        print("registers", k.n_regs)
    elif mode == "benchgrad":
        w = torch.randn(4096, 4096, device=dev, requires_grad=True)
        x = torch.randn(4096, 4096, device=dev)

        def step():
            Scale.apply(x @ w, 0.5).sum().backward()
        ms = triton.testing.do_bench(step, grad_to_none=[w])
        assert ms >= 0
    else:
        x = torch.randn(8 * mib, device=dev)
        ms = triton.testing.do_bench(lambda: scale(x, 2.0))
        assert ms >= 0
    torch.cuda.synchronize()
    print(mode, torch.cuda.max_memory_allocated(),
          torch.cuda.max_memory_reserved())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "plain")
