"""pickle of CUDA tensors under memsim record (tests/recorder_pickle.sh):
plain pickle.dumps of a tensor, of a Parameter and of a module's state
(what NVlabs/edm's persistence._check_pickleable pickles for every module
it builds) writes the storages' bytes, copied to the host: the GPU
allocates nothing; pickle.loads makes each tensor on its device again, a
new allocation of its size.  copy.copy of a tensor (also a __reduce_ex__)
shares its storage and allocates nothing."""
import copy
import pickle

import torch

m = torch.nn.Linear(256, 128).cuda()
t = torch.ones(1000, device="cuda")
base = torch.cuda.memory_allocated()
blob = pickle.dumps(t)
blob2 = pickle.dumps([m.weight, {"state": m.__dict__["_parameters"]}])
c = copy.copy(t)
print("after dumps", torch.cuda.memory_allocated() - base)
u = pickle.loads(blob)
print("loaded", u.device.type, tuple(u.shape), u.dtype,
      torch.cuda.memory_allocated() - base)
w = pickle.loads(blob2)
print("loaded2", w[0].device.type, tuple(w[0].shape),
      torch.cuda.memory_allocated() - base)
