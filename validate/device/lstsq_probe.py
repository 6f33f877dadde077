"""cuSOLVER's workspaces inside torch.linalg.lstsq's looped path (geqrf,
ormqr, then cuBLAS's trsm) on this GPU, for memsim record's rules
(traces/memsim_record/kernels.py, geqrf_workspace_bytes and
ormqr_workspace_bytes; dispatch.py, Dispatch._gels_looped):
  python3 lstsq_probe.py [SECONDS] > OUT.txt
Each line: lstsq dtype m n nrhs batch, then the caching allocator's
requests inside the call (+size allocated, -size freed).  The allocator's
history is a ring of 2,000 entries; a marker request of a size nothing
else asks for starts each call's window.  tests/data/record/
lstsq_h100.tsv holds its H100 run's two workspaces."""
import sys, time
import torch

torch.cuda.init()
torch.cuda.memory._record_memory_history(max_entries=2000)
t_end = time.time() + float(sys.argv[1] if len(sys.argv) > 1 else 120)


def probe(label, fn):
    # a marker request of a size nothing else asks for, then the call;
    # the ring buffer's entries after the marker's free are the call's
    torch.cuda.synchronize()
    torch.empty(7777777, dtype=torch.uint8, device="cuda")
    out = fn()
    torch.cuda.synchronize()
    tr = torch.cuda.memory._snapshot()["device_traces"][0]
    last = max(i for i, e in enumerate(tr) if e["size"] == 7777777)
    tr = tr[last + 1:]
    ev = [("%s%d" % ("+" if e["action"] == "alloc" else "-", e["size"]))
          for e in tr if e["action"] in ("alloc", "free_requested")]
    print(label, " ".join(ev), flush=True)
    del out


g = torch.Generator(device="cuda").manual_seed(0)
ms = (1, 2, 7, 33, 64, 200, 255, 256, 257, 300, 511, 512, 513, 700, 1000,
      1024, 1025, 2048, 3000, 4096, 5000, 8192)
ns = (1, 2, 3, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129,
      255, 256, 257, 300, 512, 513, 1024)
ks = (1, 3, 16, 64, 257)
done = 0
for dt in (torch.float32, torch.float64):
    for m in ms:
        for n in ns:
            if m < n and not (m in (1, 33, 200, 513) and n in (3, 64, 257, 1024)):
                continue
            for k in ks:
                if time.time() > t_end:
                    print("stopped at time limit", done, flush=True)
                    sys.exit(0)
                A = torch.randn((m, n), device="cuda", dtype=dt, generator=g)
                B = torch.randn((m, k), device="cuda", dtype=dt, generator=g)
                probe("lstsq %s %d %d %d ()" % (str(dt)[6:], m, n, k),
                      lambda: torch.linalg.lstsq(A, B))
                del A, B
                done += 1
                if k == 3 and n in (8, 64, 300) and m in (300, 1000, 4096):
                    A = torch.randn((3, m, n), device="cuda", dtype=dt, generator=g)
                    B = torch.randn((3, m, k), device="cuda", dtype=dt, generator=g)
                    probe("lstsq %s %d %d %d (3,)" % (str(dt)[6:], m, n, k),
                          lambda: torch.linalg.lstsq(A, B))
                    del A, B
print("done", done, flush=True)
