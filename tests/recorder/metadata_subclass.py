"""A tensor subclass of metadata only, as MONAI's MetaTensor is: a
__torch_function__ that wraps results (Tensor's, by super()) and copies
a Python attribute along, no __torch_dispatch__ (tests/
recorder_metadata_subclass.sh).  A host batch of it moved to the GPU,
ops on it, a clone that replaces the copy's __dict__ by a deep copy of
the original's, as_subclass(torch.Tensor) back to a plain tensor, a
Conv3d forward and backward, the backward of a power (Meta.clone runs
once: the script's own call).  On DEVICE (argv[1], default cuda); the
lines it prints (stderr) name no device, the same on the host."""
import copy
import sys

import torch


clones = [0]


class Meta(torch.Tensor):
    @staticmethod
    def __new__(cls, x, meta=None):
        return torch.as_tensor(x).as_subclass(cls)

    def __init__(self, x, meta=None):
        if isinstance(x, Meta):
            self.__dict__ = copy.deepcopy(x.__dict__)
        else:
            self.meta = dict(meta or {})

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        ret = super().__torch_function__(func, types, args, kwargs or {})
        if isinstance(ret, Meta) and not hasattr(ret, "meta"):
            src = next(a for a in args if isinstance(a, Meta))
            ret.__dict__ = {"meta": dict(src.meta)}
        return ret

    def as_tensor(self):
        return self.as_subclass(torch.Tensor)

    def clone(self, **kwargs):
        clones[0] += 1
        new = Meta(self.as_tensor().clone(**kwargs))
        new.__dict__ = copy.deepcopy(self.__dict__)
        return new


DEV = sys.argv[1] if len(sys.argv) > 1 else "cuda"


def say(name, t):
    print(name, "Meta" if isinstance(t, Meta) else "plain", tuple(t.shape),
          getattr(t, "meta", None), file=sys.stderr)


batch = Meta(torch.zeros(2, 1, 16, 16, 16), {"affine": "eye"})
say("batch", batch)
x = batch.to(DEV)                      # 32768 bytes
say("x", x)
y = x * 2                                 # 32768
say("y", y)
c = y.clone()                             # 32768
say("clone", c)
p = c.as_tensor()
say("plain", p)
conv = torch.nn.Conv3d(1, 4, 3, padding=1).to(DEV)
out = conv(x)
say("conv", out)
out.sum().backward()
say("grad", conv.weight.grad)
# pow's backward takes x.pow(1), whose Python reference in the fake mode
# is a.clone(): the subclass's clone must not run inside the op
w = Meta(torch.ones(8), {"k": 1}).to(DEV).requires_grad_()
(w ** 2).sum().backward()
say("w.grad", w.grad)
print("clones", clones[0], file=sys.stderr)
