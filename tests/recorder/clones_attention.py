# tests/recorder_programs.sh: memsim record --fake, a deep-copied layer
# (nn.TransformerEncoder's _get_clones) and fp32 attention with head
# dimension 100 (lightning's demo Transformer).
import copy
import torch
layer = torch.nn.Linear(200, 200)
lin = copy.deepcopy(layer).cuda()
x = torch.randn(700, 200, device="cuda")
y = lin(x)
print("tied", copy.deepcopy(torch.nn.Sequential(lin, lin))[1] is not None)
q = torch.randn(20, 2, 35, 100, device="cuda", requires_grad=True)
o = torch.nn.functional.scaled_dot_product_attention(q, q, q)
