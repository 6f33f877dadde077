# tests/recorder_dataptr.sh: data pointers of CUDA tensors under --fake,
# as transformers' save_pretrained (id_tensor_storage) and safetensors
# (_find_shared_tensors) read them to find tied weights.
import warnings
import torch
import torch.nn as nn

warnings.simplefilter("error")   # FakeTensor's "Accessing the data pointer"
m = nn.Sequential(nn.Embedding(50, 16), nn.Linear(16, 16), nn.Linear(16, 50))
m[2].weight = m[0].weight        # tied, as a language model's head
m = m.cuda()
sd = m.state_dict()
ptrs = {k: v.untyped_storage().data_ptr() for k, v in sd.items()}
print("tied", ptrs["0.weight"] == ptrs["2.weight"])
print("distinct", len(set(ptrs.values())), "of", len(ptrs))
print("nonzero", all(p != 0 for p in ptrs.values()))
w = m[1].weight
v = w.view(-1)[5:]
print("view", v.data_ptr() - w.data_ptr() == 5 * w.element_size(),
      v.untyped_storage().data_ptr() == w.untyped_storage().data_ptr())
# disjoint ranges: [ptr, ptr + nbytes) of the distinct storages
r = sorted({(v.untyped_storage().data_ptr(), v.untyped_storage().nbytes())
            for v in sd.values()})
print("disjoint", all(a + n <= b for (a, n), (b, _) in zip(r, r[1:])))
c = torch.zeros(3)
print("cpu", c.data_ptr() == c.untyped_storage().data_ptr() != 0)
