#!/bin/sh
# memsim record --fake, a Tensor subclass with neither __torch_function__
# nor __torch_dispatch__ of its own on the fake GPU: in eager PyTorch
# Tensor.__torch_function__ wraps every op's result as the subclass
# (_convert: as_subclass), host copies included.  The fake class of
# such a subclass had the disabled __torch_function__ its metaclass
# gives a class with a __torch_dispatch__, so results came back plain:
# BigGAN-PyTorch's G(z) of a Distribution z is a Distribution, whose
# .to() (its own, reading dist_type) fails in torchvision's save_image
# on the GPU, and recorded to the end here.  Skips (77) without
# PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/s.py" <<'PY'
import torch
import torch.nn.functional as F


class Tagged(torch.Tensor):
    pass


w = torch.randn(4, 8, device="cuda").as_subclass(Tagged)
lin = torch.nn.Linear(8, 8).cuda()
res = {"mul": w * 2, "method": w.exp(), "torch": torch.mul(w, 2),
       "cat": torch.cat([w, w]), "view": w.view(-1), "sum": w.sum(),
       "linear": F.linear(w, lin.weight), "module": lin(w),
       "float": w.half().float(), "cpu": w.cpu()}
print(" ".join("%s=%s" % (k, type(v).__name__) for k, v in res.items()))
assert res["cpu"].device.type == "cpu" and res["mul"].device.type == "cuda"


class Distribution(torch.Tensor):
    def init_distribution(self, dist_type):
        self.dist_type = dist_type

    def to(self, *args, **kwargs):
        new_obj = Distribution(self)
        new_obj.init_distribution(self.dist_type)
        new_obj.data = super().to(*args, **kwargs)
        return new_obj


z = Distribution(torch.randn(4, 8))
z.init_distribution("normal")
z = z.to("cuda")
g = lin(z * 2)
try:
    g.cpu().to("cpu", torch.uint8)
    print("to: no error")
except AttributeError as e:
    print("to:", e)
PY
(cd "$tmp" && $MEMSIM record --fake -o s.csv -- "$PY" s.py) >"$tmp/out" 2>&1 ||
	fail "record: $(tail -3 "$tmp/out")"
want="mul=Tagged method=Tagged torch=Tagged cat=Tagged view=Tagged sum=Tagged linear=Tagged module=Tagged float=Tagged cpu=Tagged"
grep -qx "$want" "$tmp/out" || fail "types: $(head -1 "$tmp/out"), want $want"
grep -qx "to: 'Distribution' object has no attribute 'dist_type'" "$tmp/out" ||
	fail "Distribution.to: $(sed -n 2p "$tmp/out")"
finish recorder_subclass_ops
