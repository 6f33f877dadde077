"""A router computed in float32 by Tensor.type(dtype) inside a function
compiled with fullgraph=True, as transformers' DeepSeek-V2 MoE gate does
(F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))),
and a legacy type name (x.type("torch.cuda.HalfTensor")) in the same graph:
python3 compile_type.py.  Prints the routed expert counts' sum and the
output's dtype."""
import torch

w = torch.randn(8, 64, device="cuda", dtype=torch.bfloat16)


@torch.compile(fullgraph=True)
def gate(h):
    logits = torch.nn.functional.linear(h.type(torch.float32), w.type(torch.float32))
    scores = logits.softmax(-1)
    top = scores.topk(2, dim=-1)
    return top.values.type("torch.cuda.HalfTensor"), top.indices


h = torch.randn(32, 64, device="cuda", dtype=torch.bfloat16)
vals, idx = gate(h)
print("dtype", vals.dtype, "rows", idx.shape[0])
