"""An additive attention mask of a padded batch, made as transformers'
eager_mask makes it (masking_utils: a bool mask, then torch.where(mask,
torch.zeros((), dtype), torch.finfo(dtype).min)), 16 x 1 x 80 x 80
float32 elements (over the recorder's SHADOW_LIMIT), whose last query
row NLLB-MoE's router reads back as a padding mask
(NllbMoeTop2Router.route_tokens: padding_mask[:, :, -1, :].reshape(-1),
then ~padding_mask.bool()) and routes only the tokens it keeps."""
import torch

B, S = 16, 80
lengths = [80 - 3 * i for i in range(B)]          # 80, 77, ..., 35
am = torch.zeros(B, S, dtype=torch.long)
for i, n in enumerate(lengths):
    am[i, :n] = 1
am = am.cuda()
kv = am.bool()[:, None, None, :]                   # (B, 1, 1, S)
mask = kv.expand(B, 1, S, S)                       # (B, 1, S, S) bool
dtype = torch.float32
m = torch.where(mask, torch.zeros((), device=mask.device, dtype=dtype),
                torch.finfo(dtype).min)
pm = m[:, :, -1, :].reshape(-1)
keep = ~pm.bool()          # True where pm is 0: the tokens attended
print("kept", int(keep.sum().item()))
rows = torch.nonzero(keep).shape[0]
print("rows", rows)
x = torch.randn(B * S, 64, device="cuda")
print("picked", tuple(x[keep].shape))
