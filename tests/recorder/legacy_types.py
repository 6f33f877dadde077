# The legacy tensor types of torch.cuda, as older programs use them
# (eriklindernoren/PyTorch-GAN: `Tensor = torch.cuda.FloatTensor if cuda
# else torch.FloatTensor`, then Tensor(numpy array), Tensor(n, 1),
# imgs.type(Tensor)): a CPU build refused to construct them ("Torch not
# compiled with CUDA enabled"), a CUDA build's .type(T) initialized CUDA.
# memory_allocated() after each step: the H200's figures (PyTorch 2.11),
# blocks of round_size (the 256-byte tensor takes 512).
import numpy as np
import torch

T = torch.cuda.FloatTensor


def m(tag, t):
    print(tag, t.device, str(t.dtype)[6:], tuple(t.shape),
          torch.cuda.memory_allocated())


m("numpy", T(np.random.random((64, 1, 1, 1))))
b = T(64, 1).fill_(1.0)
m("sizes", b)
m("long", torch.cuda.LongTensor(np.random.randint(0, 10, 300)))
y = torch.randn(64, 1, 28, 28).type(T)
m("type", y)
m("name", y.type("torch.cuda.HalfTensor"))
w = y.type(torch.FloatTensor)
print("host", w.device, w.type(), torch.cuda.memory_allocated())
m("list", T([1.0, 2.0]))
m("byte", torch.cuda.ByteTensor(3, 4))
m("size", T(torch.Size([10, 10])))
print("same", T(y).data_ptr() == y.data_ptr(), torch.cuda.memory_allocated())
print("isinstance", isinstance(y, T), isinstance(w, T),
      isinstance(b, torch.cuda.LongTensor), y.type())
torch.set_default_tensor_type(torch.cuda.FloatTensor)
m("default", torch.zeros(8))
torch.set_default_tensor_type(torch.FloatTensor)
print("default host", torch.zeros(8).device)
print("peak", torch.cuda.max_memory_allocated())
