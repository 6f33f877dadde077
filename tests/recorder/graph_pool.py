# A graph batch pooled as PyTorch Geometric pools it (TopKPooling's topk,
# then global_max_pool): 60 graphs of 40 nodes; tests/recorder_known.sh.
import torch
dev = "cuda"
batch = torch.arange(60).repeat_interleave(40).to(dev)  # node -> graph
x = torch.randn(2400, 32, device=dev)
score = torch.randn(2400, device=dev)
s, perm = torch.sort(score, descending=True)     # unknown order
b = batch[perm]                                   # graphs, reordered
b, bperm = torch.sort(b, stable=True)
keep = perm[bperm[torch.randn(2400, device=dev) > 0]]
x = x[keep]
# the pooled batch vector as PyG's Connect.get_pooled_batch makes it
n = keep.size(0)
batch = torch.arange(n, device=dev).scatter_(
    0, torch.arange(n, device=dev), batch[keep])
size = int(batch.max()) + 1                       # the number of graphs
out = x.new_zeros(size, 32).scatter_reduce(
    0, batch.view(-1, 1).expand_as(x), x, "amax", include_self=False)
print(size, tuple(out.shape), int(b.max()), int(batch.min()))
