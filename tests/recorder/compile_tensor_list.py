# torch.tensor of a list of 0-dim tensors in a frame Dynamo compiles
# after a graph break (Qwen2-VL's get_rope_index: its rope deltas, after
# torch._check_tensor_all), reduced by a helper from the r36c kit.
import torch
def check(cond):
    torch._check_tensor_all(cond)
def f(x, ids, am):
    check((ids >= 0).all())
    deltas = []
    pos_ids = torch.zeros(3, ids.shape[0], ids.shape[1], dtype=ids.dtype, device=ids.device)
    for b in range(ids.shape[0]):
        cur = ids[b][am[b] == 1]
        pieces = [torch.arange(5, device=x.device).view(1, -1).expand(3, -1) + 0]
        pieces.append(torch.arange(cur.shape[0] - 5, device=x.device).view(1, -1).expand(3, -1) + 5)
        llm = torch.cat(pieces, dim=1).reshape(3, -1)
        pos_ids[:, b, am[b].bool()] = llm.to(pos_ids.device)
        deltas.append(llm.max() + 1 - len(cur))
    d = torch.tensor(deltas, device=ids.device).unsqueeze(1)
    return x * 2 + d
cf = torch.compile(f)
x = torch.randn(2, 8, device="cuda")
ids = torch.zeros(2, 8, dtype=torch.long, device="cuda")
am = torch.ones(2, 8, dtype=torch.long, device="cuda")
print(cf(x, ids, am).shape)
