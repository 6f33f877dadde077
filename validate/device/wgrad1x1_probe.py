"""1x1 stride-1 convolutions' backward-weight workspaces on this GPU, for
memsim record's rule (traces/memsim_record/kernels.py, conv):
  python3 wgrad1x1_probe.py > OUT.txt
Each line: dtype N C K H and the allocator's requests (+alloc / -free)
inside torch.autograd.grad(conv2d(x, w), w): grad_weight, then cuDNN's
workspace.  tests/data/record/conv_wgrad1x1_h100.tsv is its H100 run."""
import itertools, torch
torch.cuda.init()
torch.cuda.memory._record_memory_history(max_entries=1000000)
DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
CK = [(64, 256), (256, 64), (256, 256), (512, 1024), (1024, 2048),
      (2048, 512), (1024, 256), (256, 1024), (128, 128), (2048, 2048)]
NH = [(4, 8), (4, 16), (4, 32), (8, 64), (16, 56), (64, 7), (64, 14),
      (32, 28), (1, 16), (2, 64)]
n0 = 0
for dt, (c, k), (n, h) in itertools.product(DT, CK, NH):
    x = torch.randn(n, c, h, h, device="cuda", dtype=DT[dt])
    w = torch.randn(k, c, 1, 1, device="cuda", dtype=DT[dt], requires_grad=True)
    y = torch.nn.functional.conv2d(x, w)
    g = torch.ones_like(y)
    torch.cuda.synchronize()
    n0 = len(torch.cuda.memory._snapshot()["device_traces"][0])
    (gw,) = torch.autograd.grad(y, w, g)
    torch.cuda.synchronize()
    tr = torch.cuda.memory._snapshot()["device_traces"][0][n0:]
    ev = [("+" if e["action"] == "alloc" else "-") + str(e["size"])
          for e in tr if e["action"] in ("alloc", "free_completed")]
    print(dt, n, c, k, h, " ".join(ev), flush=True)
    del x, w, y, g, gw
