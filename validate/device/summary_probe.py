#!/usr/bin/env python3
"""Real figures for `memsim summary` and `memsim explain` (docs/guide.md, "memsim
explain"): a small MLP trained for three steps with the allocation history
on; writes to OUTDIR torch.cuda.memory_summary() at the end (summary.txt)
and the snapshot (end.pickle); the CUDA context and libraries' memory as
nvidia-smi sees it (context.txt: mem_get_info's used bytes less
memory_reserved()); then, under set_per_process_memory_fraction(F), a
request that cannot fit: PyTorch's OutOfMemoryError message (oom.txt) and
the snapshot with the OOM in its trace (oom.pickle).

usage: summary_probe.py OUTDIR FRACTION
"""
import os
import sys

import torch


def main(out, fraction):
    torch.cuda.memory._record_memory_history(max_entries=1000000)
    model = torch.nn.Sequential(*[torch.nn.Sequential(
        torch.nn.Linear(4096, 4096), torch.nn.ReLU()) for _ in range(8)]).cuda()
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(3):
        x = torch.randn(512, 4096, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(torch.cuda.memory_summary())
    torch.cuda.memory._dump_snapshot(os.path.join(out, "end.pickle"))
    free, total = torch.cuda.mem_get_info()
    with open(os.path.join(out, "context.txt"), "w") as f:
        f.write("total %d used %d reserved %d context %d\n" % (
            total, total - free, torch.cuda.memory_reserved(),
            total - free - torch.cuda.memory_reserved()))
    torch.cuda.set_per_process_memory_fraction(fraction)
    try:
        big = torch.empty(int(total * fraction), dtype=torch.uint8,
                          device="cuda")
        del big
    except torch.OutOfMemoryError as e:
        with open(os.path.join(out, "oom.txt"), "w") as f:
            f.write(str(e) + "\n")
    torch.cuda.memory._dump_snapshot(os.path.join(out, "oom.pickle"))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
