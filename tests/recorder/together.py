"""Two processes on one GPU (issue 15):
    python3 tests/recorder/together.py A|B DIR [alone]
A allocates one 80 GiB block and frees it (PyTorch keeps the segment
cached), then signals; B then asks for 1 GiB blocks, 64 of them, keeping
each, until one fails.  Alone, each fits.  The processes meet through files
in DIR: each waits until both CUDA contexts exist before it logs
cudaMemGetInfo (free, total), so the free bytes are what the two can share."""
import os
import sys
import time

import torch

GiB = 1 << 30
role, d = sys.argv[1], sys.argv[2]
alone = len(sys.argv) > 3 and sys.argv[3] == "alone"


def touch(n):
    open(os.path.join(d, n), "w").close()


def wait(n, limit=120):
    t0 = time.time()
    while not os.path.exists(os.path.join(d, n)):
        if time.time() - t0 > limit:
            raise SystemExit("%s: timed out waiting for %s" % (role, n))
        time.sleep(0.005)


def info(tag):
    f, t = torch.cuda.mem_get_info()
    print("%s %s free %d total %d reserved %d" % (
        role, tag, f, t, torch.cuda.memory_reserved()), file=sys.stderr,
        flush=True)


info("context")
if not alone:
    touch(role + ".ctx")
    wait(("B" if role == "A" else "A") + ".ctx")
info("both")
if role == "A":
    x = torch.empty(80 * GiB, dtype=torch.uint8, device="cuda")
    del x
    info("cached")
    if not alone:
        touch("A.done")
        wait("B.done", 300)
else:
    if not alone:
        wait("A.done")
    info("start")
    held = []
    for i in range(64):
        try:
            held.append(torch.empty(GiB, dtype=torch.uint8, device="cuda"))
        except torch.cuda.OutOfMemoryError as e:
            print("B OOM at request %d: %s" % (i, str(e).splitlines()[0]),
                  file=sys.stderr, flush=True)
            break
    info("end")
    if not alone:
        touch("B.done")
s = torch.cuda.memory_stats()
print("%s stats peak_reserved %d segments %d num_ooms %d" % (
    role, s["reserved_bytes.all.peak"], s["segment.all.allocated"],
    s.get("num_ooms", -1)), file=sys.stderr, flush=True)
