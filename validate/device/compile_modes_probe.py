# On a GPU: which kernels Triton's autotuner benchmarks when one compiled
# function runs as an inference graph (no_grad) and then as a training
# forward and backward (tests/recorder/compile_modes.py).  Prints, per
# phase, the L2-cache-sized blocks benchmark_gpu allocated (one per
# configuration timed) and the kernel files that allocated them.  The
# recorder (compiled.py, Program._kernel_keys) expects the training
# forward's GELU tuned again (optimize_mem in its source differs from the
# inference graph's): inference 1 kernel, forward 1, backward 1.
import os, re, collections
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")
import torch

l2 = torch.cuda.get_device_properties(0).L2_cache_size
torch.cuda.memory._record_memory_history(max_entries=100000)
f = torch.compile(lambda x: torch.nn.functional.gelu(x) * 2)
x = torch.randn(64, 256, device="cuda", requires_grad=True)
marks = []
with torch.no_grad():
    f(x)
torch.cuda.synchronize()
marks.append(("inference", len(torch.cuda.memory._snapshot()["device_traces"][0])))
y = f(x)
torch.cuda.synchronize()
marks.append(("forward", len(torch.cuda.memory._snapshot()["device_traces"][0])))
y.sum().backward()
torch.cuda.synchronize()
ev = torch.cuda.memory._snapshot()["device_traces"][0]
marks.append(("backward", len(ev)))
start = 0
for name, end in marks:
    kern = collections.Counter()
    for e in ev[start:end]:
        if e["action"] == "alloc" and e["size"] >= l2 - (l2 % 512):
            k = "?"
            for fr in e.get("frames", []):
                if re.search(r"/c[a-z0-9]{40,}\.py$", fr["filename"]):
                    k = "%s:%d" % (fr["filename"].rsplit("/", 1)[-1][:10], fr["line"])
                    break
            kern[k] += 1
    print(name, "flush blocks", sum(kern.values()), "kernels", len(kern), dict(kern))
    start = end
print(torch.__version__, torch.cuda.get_device_name(0), "L2", l2)
