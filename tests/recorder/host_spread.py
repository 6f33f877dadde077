"""Several floats of unknown values read on the host (host:spread): a
global pruning threshold over importance scores read layer by layer
(Torch-Pruning's global pruning: one value everywhere tied, and nothing
was pruned), a pair read as bounds, a box's corners; one float alone
keeps the one-element rule's 1.0."""
import torch

ws = [torch.randn(c, 16, device="cuda") for c in (32, 64, 128)]
imps = [w.pow(2).sum(1).cpu() for w in ws]
every = torch.cat(imps)
k = int(0.5 * every.numel())
thr = torch.kthvalue(every, k).values
print("pruned", sum(int((i <= thr).sum()) for i in imps), "of", every.numel())
print("distinct", every.unique().numel() == every.numel())
x = torch.randn(100, device="cuda")
lo, hi = torch.stack([x.min(), x.max()]).cpu().tolist()
print("bounds in order", lo < hi)
box = torch.randn(1, 4, device="cuda").cpu()[0]
print("box", bool(box[2] > box[0] and box[3] > box[1]))
print("mean", float(torch.randn(6, 5, device="cuda").cpu().double().mean()))
print("one", x.sum().cpu().item())
