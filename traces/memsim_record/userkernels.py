"""A program's own Triton kernels under memsim record --fake.

Programs and kernel libraries launch Triton kernels themselves
(`kernel[grid](x, out, n, BLOCK=1024)`, KernelInterface.__getitem__ ->
JITFunction.run), on tensors they allocated first (`torch.empty_like`
and the like, which the recording has).  A launch allocates nothing
through the caching allocator; on a machine with no GPU it cannot even
compile (Triton's driver looks for libcuda).  Here JITFunction.run
returns at once: the kernel's outputs keep their values (assumption
`triton:kernel-not-run`, once a kernel), as every GPU value under the
rules does (docs/recording-values.md).  A compile ahead of the launch
(`kernel.warmup(...)`, `run(..., warmup=True)`: the registers and shared
memory it answers are the GPU compiler's) is refused with a line naming
the kernel.

What Triton allocates itself is its benchmarking's.
triton.testing.do_bench (the autotuner's benchmarker,
Autotuner.do_bench -> driver.active.get_benchmarker()) calls the
function once, then takes the driver's get_empty_cache_for_benchmark()
buffer (256 MiB of int32 in Triton 3), which the later calls run
beside (clear_cache zeroes it before each) and which goes when it
returns.  Here the function runs once before the buffer and once while
it lives, as the runtime estimate's and the warm-up's calls do (with the
gradients the earlier calls left: a backward accumulates into them),
and once more after the gradients of grad_to_none are dropped, as before
each timed call (AccumulateGrad makes them anew); what the other calls
allocate, each frees (a kernel_call's restore_value copies), and they
make the same blocks again.  An
autotuned kernel (Autotuner.run) benchmarks each configuration left
after pruning the first time it meets a key: the program's pre_hooks
(the copies restore_value makes and its post_hook writes back) are run
as they are.  A benchmark answers 1.0 ms for every configuration
(assumption `triton:benchmark-time`, a row each call, naming the
program's line that launched or benchmarked):
the autotuner keeps the first, whose choice moves no memory.
"""

from . import devices, values

# get_empty_cache_for_benchmark's size, where the driver's class is not
# at hand (Triton 3: 256 * 1024 * 1024 bytes)
CACHE_BYTES = 256 << 20
BENCH_MS = 1.0


def _empty_cache(torch):
    """The benchmark's L2 flush buffer, as this Triton's CUDA driver makes
    it (the method uses no driver state: it calls torch.empty on "cuda",
    which the recording takes)."""
    try:
        from triton.backends.nvidia.driver import CudaDriver
        return CudaDriver.get_empty_cache_for_benchmark(None)
    except Exception:
        return torch.empty(CACHE_BYTES // 4, dtype=torch.int32,
                           device="cuda")


# The most shared memory a block may use (opt-in), by compute capability:
# CUDA's programming guide, as Triton's driver reports it (232448 on the
# H200, measured).
SHARED_MEM = {(7, 0): 98304, (7, 5): 65536, (8, 0): 166912, (8, 6): 101376,
              (8, 7): 166912, (8, 9): 101376, (9, 0): 232448,
              (10, 0): 232448, (12, 0): 101376}


class _Utils:
    def __init__(self, props):
        self.props = props

    def get_device_properties(self, device):
        return dict(self.props)


class Driver:
    """Triton's active driver under --fake, answered from the recorder's
    device (--device) and never the CUDA driver: the torch device and
    its index, the compile target (GPUTarget("cuda", major * 10 + minor,
    32): what front-end analysis needs, Dynamo's mutation analysis of a
    kernel in a compiled function included), device properties (SMs,
    shared memory, registers, warp size; not the clock rates), and the
    benchmark's pieces.  Nothing here launches."""

    def __init__(self, torch, dev, do_bench):
        _label, major, minor, _total, sms = dev
        self.torch, self.capability = torch, (major, minor)
        self.bench = do_bench
        self.utils = _Utils({
            "max_shared_mem": SHARED_MEM.get((major, minor), 101376),
            "max_num_regs": 65536, "multiprocessor_count": sms,
            "warpSize": 32})

    def is_active(self):
        return True

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        major, minor = self.capability
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_active_torch_device(self):
        return self.torch.device("cuda", self.torch.cuda.current_device())

    def get_current_device(self):
        return self.torch.cuda.current_device()

    def set_current_device(self, device):
        self.torch.cuda.set_device(device)

    def get_current_stream(self, device=None):
        return 0

    def get_device_capability(self, device=None):
        return self.capability

    def get_device_interface(self):
        return self.torch.cuda

    def get_benchmarker(self):
        return self.bench

    def get_empty_cache_for_benchmark(self):
        return _empty_cache(self.torch)

    def clear_cache(self, cache):
        cache.zero_()


def patch(rec, triton):
    """Patches the imported `triton` package (host.on_import); returns
    the undo."""
    import torch
    from triton.runtime import autotuner, jit
    import triton.testing as testing

    seen = set()

    def run(self, *args, grid=None, warmup=False, **kwargs):
        if warmup:
            name = getattr(getattr(self, "fn", None), "__qualname__",
                           None) or repr(self)
            raise RuntimeError(
                "memsim record: Triton kernel %s is compiled ahead of its "
                "launch (warmup): its registers and shared memory are the "
                "GPU compiler's, not available under --fake" % name)
        if self not in seen:
            seen.add(self)
            rec.assume("triton:kernel-not-run")
        return None

    def do_bench(fn, warmup=25, rep=100, grad_to_none=None,
                 quantiles=None, return_mode="mean", **kwargs):
        fn()
        cache = _empty_cache(torch)
        fn()        # the runtime estimate's and the warm-up's calls
        if grad_to_none is not None:
            # the timed calls: each after the gradients are dropped
            for x in grad_to_none:
                x.grad = None
            fn()
        del cache
        values.assume(rec, "triton:benchmark-time", BENCH_MS)
        if quantiles is not None:
            ret = [BENCH_MS] * len(quantiles)
            return ret[0] if len(ret) == 1 else ret
        return [BENCH_MS] if return_mode == "all" else BENCH_MS

    saved = [(jit.JITFunction, "run", jit.JITFunction.__dict__["run"]),
             (testing, "do_bench", testing.do_bench)]
    jit.JITFunction.run = run
    testing.do_bench = do_bench
    # The autotuner's benchmarker: a property (a functools.cached_property
    # in Triton 3.6) over driver.active, or a module-level do_bench in
    # older Tritons.
    at = autotuner.Autotuner
    if "do_bench" in at.__dict__:
        saved.append((at, "do_bench", at.__dict__["do_bench"]))
        at.do_bench = property(lambda self: do_bench)
    if hasattr(autotuner, "do_bench"):
        saved.append((autotuner, "do_bench", autotuner.do_bench))
        autotuner.do_bench = do_bench

    # the active driver (triton.runtime.driver.set_active; its reset
    # would create the CUDA one)
    from triton.runtime import driver as config
    if hasattr(config, "set_active"):
        saved.append((config, "_active", getattr(config, "_active", None)))
        config.set_active(Driver(torch, devices.DEVICES[rec.opt.device],
                                 do_bench))

    def undo():
        for owner, attr, value in reversed(saved):
            setattr(owner, attr, value)
    return undo
