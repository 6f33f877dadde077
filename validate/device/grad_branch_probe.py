"""Backward formulas with a branch for tensor subclasses, on the GPU.

    python3 grad_branch_probe.py CASE
    python3 grad_branch_probe.py --snapshots OUTDIR [CASE...]

The first form runs one case as a program (record it with `memsim record
--fake`); the second runs the cases (default all) in one process on a
GPU and writes OUTDIR/CASE.pickle, the allocator's history
(torch.cuda.memory._dump_snapshot) after each; a marker block of
7777 * 512 bytes is made and freed before each case, so the case's
requests are those after the marker's free.  Compare with the
recording: tests/corpus/snapdiff.py after cutting the snapshot at the
marker.  Each case makes x (16, 96) float32 (6144 bytes) that requires
grad, one op, and backward() of a sum (docs/recording.md, autograd's
branches for tensor subclasses)."""
import os
import sys

CASES = ("masked_select", "cummax", "cummin", "take", "diagonal", "cumprod",
         "bcel_tgt", "bcel_tgt_pw", "bce_tgt", "max_all", "median_all",
         "prod_all", "prod_dim", "clamp_t", "masked_fill_t", "index_select",
         "trace", "slice", "select", "logsigmoid")


def run(case, dev="cuda"):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = (torch.rand(16, 96, device=dev) + 0.5).requires_grad_(True)
    mask = (torch.arange(16 * 96, device=dev) % 2 == 0).view(16, 96)
    idx = torch.randint(0, 16 * 96, (40,), device=dev)
    rows = torch.randint(0, 16, (24,), device=dev)
    if case == "masked_select":
        y = x.masked_select(mask)
    elif case == "cummax":
        y = x.cummax(1).values
    elif case == "cummin":
        y = x.cummin(0).values
    elif case == "take":
        y = x.take(idx)
    elif case == "diagonal":
        y = x.diagonal(offset=2)
    elif case == "cumprod":
        y = x.cumprod(1)
    elif case in ("bcel_tgt", "bcel_tgt_pw"):
        t = torch.rand(16, 96, device=dev).requires_grad_(True)
        kw = {}
        if case == "bcel_tgt_pw":
            kw["pos_weight"] = torch.full((96,), 2.0, device=dev)
        y = F.binary_cross_entropy_with_logits(x, t, **kw)
    elif case == "bce_tgt":
        t = torch.rand(16, 96, device=dev).requires_grad_(True)
        y = F.binary_cross_entropy(torch.sigmoid(x), t)
    elif case == "max_all":
        y = x.max()
    elif case == "median_all":
        y = x.median()
    elif case == "prod_all":
        y = x.prod()
    elif case == "prod_dim":
        y = x.prod(1)
    elif case == "clamp_t":
        y = x.clamp(min=torch.full((96,), 0.7, device=dev),
                    max=torch.full((96,), 1.2, device=dev))
    elif case == "masked_fill_t":
        v = torch.tensor(3.0, device=dev, requires_grad=True)
        y = x.masked_fill(mask, v)
    elif case == "index_select":
        y = x.index_select(0, rows)
    elif case == "trace":
        y = x[:, :16].trace()
    elif case == "slice":
        y = x[:, 8:40]
    elif case == "select":
        y = x[3]
    elif case == "logsigmoid":
        y = F.logsigmoid(x)
    else:
        raise SystemExit("grad_branch_probe.py: no case %s" % case)
    y.sum().backward()


def snapshots(out, cases):
    import gc
    import torch
    os.makedirs(out, exist_ok=True)
    torch.cuda.memory._record_memory_history(max_entries=200000)
    for c in cases:
        m = torch.empty(7777 * 512, dtype=torch.uint8, device="cuda")
        del m
        run(c)
        gc.collect()
        torch.cuda.synchronize()
        torch.cuda.memory._dump_snapshot(os.path.join(out, c + ".pickle"))
        print("case", c, "done", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--snapshots":
        snapshots(sys.argv[2], sys.argv[3:] or CASES)
    elif len(sys.argv) == 2:
        run(sys.argv[1], os.environ.get("PROBE_DEVICE", "cuda"))
    else:
        raise SystemExit(__doc__)
