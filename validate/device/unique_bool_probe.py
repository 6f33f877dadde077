# torch.unique of bool tensors on the GPU: every allocation of each call
# (tests/data/record/unique_bool_h100.txt: python3 validate/device/unique_bool_probe.py)
import sys, torch
dev = "cuda"
name = torch.cuda.get_device_name()
sms = torch.cuda.get_device_properties(0).multi_processor_count
print("# torch.unique on bool inputs (%s, torch %s): elements, inverse, counts, then every allocation of the call in order" % (name, torch.__version__))
print(torch.__version__, name.replace(" ", "_"), sms)
g = torch.Generator(device=dev).manual_seed(0)
for n in (1024, 4096, 4097, 8192, 65536, 1 << 20, 1 << 24):
    for inv, cnt in ((False, False), (True, False), (False, True), (True, True)):
        x = torch.rand(n, device=dev, generator=g) < 0.5
        torch.cuda.synchronize()
        torch.cuda.memory._record_memory_history(max_entries=10000)
        out = torch.unique(x, return_inverse=inv, return_counts=cnt)
        torch.cuda.synchronize()
        s = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        ev = [e["size"] for e in s["device_traces"][0] if e["action"] == "alloc"]
        print(n, int(inv), int(cnt), *ev)
        del out, x
