# .tolist() of a GPU tensor larger than 1 MiB: one host copy (one
# assumption), not an .item() per element (segment-anything's
# mask_to_rle_pytorch lists the run lengths of every mask).
import torch
x = torch.randn(300000, device="cuda")
runs = (x * 3).long()             # 300,000 values the fake run does not have
counts = runs.cpu().tolist()
print("tolist", len(counts), set(counts))
