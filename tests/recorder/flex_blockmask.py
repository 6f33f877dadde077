"""create_block_mask(..., _compile=True) at every step, as programs build
their FlexAttention masks (lucidrains' native-sparse-attention,
attention-gym's examples): PyTorch's create_block_mask calls
torch.compile(create_block_mask) at each call, which Dynamo compiles
once (the "inductor" backend is one callable).  Prints the peaks."""
import torch
from torch.nn.attention.flex_attention import create_block_mask, \
    flex_attention

attend = torch.compile(flex_attention)


def causal(b, h, q, k):
    return q >= k


n = 8192
q = torch.randn(1, 2, n, 64, device="cuda", requires_grad=True)
for _ in range(12):
    bm = create_block_mask(causal, B=None, H=None, Q_LEN=n, KV_LEN=n,
                           _compile=True)
    attend(q, q, q, block_mask=bm).sum().backward()
torch.cuda.synchronize()
print(torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved())
