"""The allocator's requests of small fp32 convolutions under cuDNN's
heuristics (cudnn.benchmark off), forward, backward-data and
backward-weight one at a time, for memsim record's rules
(traces/memsim_record/kernels.py, conv): the layers of a CIFAR
autoencoder (Lightning's UvA-DL tutorial 08, batch 256, 32x32, base 32
channels), whose real peak held workspaces the rules do not give
(docs/corpus.md, fortieth round).
  python3 ae_conv_probe.py > OUT.txt
Each line: kind N C K H stride pad out_pad phase, then the requests
(+alloc / -free) inside that phase."""
import torch
import torch.nn.functional as F

torch.backends.cudnn.benchmark = False
torch.cuda.init()
torch.cuda.memory._record_memory_history(max_entries=1000000)
# (transposed, C, K, H, stride, padding, output_padding)
LAYERS = [(0, 3, 32, 32, 2, 1, 0), (0, 32, 32, 16, 1, 1, 0),
          (0, 32, 64, 16, 2, 1, 0), (0, 64, 64, 8, 1, 1, 0),
          (0, 64, 64, 8, 2, 1, 0), (1, 64, 64, 4, 2, 1, 1),
          (0, 64, 64, 8, 1, 1, 0), (1, 64, 32, 8, 2, 1, 1),
          (0, 32, 32, 16, 1, 1, 0), (1, 32, 3, 16, 2, 1, 1)]


def window(fn):
    torch.cuda.synchronize()
    n0 = len(torch.cuda.memory._snapshot()["device_traces"][0])
    out = fn()
    torch.cuda.synchronize()
    tr = torch.cuda.memory._snapshot()["device_traces"][0][n0:]
    return out, " ".join(("+" if e["action"] == "alloc" else "-") +
                         str(e["size"]) for e in tr
                         if e["action"] in ("alloc", "free_completed"))


def probe(n, tr, c, k, h, st, pad, op):
    x = torch.randn(n, c, h, h, device="cuda", requires_grad=True)
    w = torch.randn((c, k, 3, 3) if tr else (k, c, 3, 3), device="cuda",
                    requires_grad=True)
    head = "%s %d %d %d %d %d %d %d" % ("convT" if tr else "conv", n, c, k,
                                        h, st, pad, op)
    y, ev = window(lambda: F.conv_transpose2d(x, w, None, st, pad, op)
                   if tr else F.conv2d(x, w, None, st, pad))
    print(head, "forward", ev, flush=True)
    g = torch.randn_like(y)
    _, ev = window(lambda: torch.autograd.grad(y, x, g, retain_graph=True))
    print(head, "data", ev, flush=True)
    _, ev = window(lambda: torch.autograd.grad(y, w, g))
    print(head, "weight", ev, flush=True)


for n in (256, 64):
    for layer in LAYERS:
        probe(n, *layer)
