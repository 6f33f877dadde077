#!/bin/sh
# memsim record --fake, a Tensor subclass with no __new__ of its own made
# from a tensor, SUBCLASS(t) (torch.Tensor's legacy "new(Tensor other)":
# an alias of t under the subclass's type), and given a device's data
# by `.data = ...to("cuda")`: BigGAN-PyTorch's utils.Distribution, its z
# and y vectors (prepare_z_y).  The recording stopped at the constructor
# ("the raw Tensor object is already associated to a python object of
# type Tensor": the alias came back through the recorder's dispatch
# mode), and a host subclass tensor given fake data became a meta
# tensor of the subclass, not a fake CUDA one.  Skips (77) without
# PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/d.py" <<'PY'
import torch


class Distribution(torch.Tensor):
    def init_distribution(self, dist_type, **kwargs):
        self.dist_type = dist_type
        self.dist_kwargs = kwargs

    def sample_(self):
        if self.dist_type == "normal":
            self.normal_(0, 1)
        else:
            self.random_(0, self.dist_kwargs["n"])

    def to(self, *args, **kwargs):
        new_obj = Distribution(self)
        new_obj.init_distribution(self.dist_type, **self.dist_kwargs)
        new_obj.data = super().to(*args, **kwargs)
        return new_obj


z = Distribution(torch.randn(64, 120))
assert type(z) is Distribution and z.device.type == "cpu"
z.init_distribution("normal")
z = z.to("cuda", torch.float16)
assert isinstance(z, Distribution), type(z)
assert z.device.type == "cuda" and z.dtype == torch.float16, (z.device, z.dtype)
assert z.dist_type == "normal"
y = Distribution(torch.zeros(64))
y.init_distribution("categorical", n=1000)
y = y.to("cuda", torch.int64)
z.sample_()
y.sample_()
assert y.device.type == "cuda" and y.dtype == torch.int64
w = Distribution(torch.ones(256, device="cuda"))
assert isinstance(w, Distribution) and w.device.type == "cuda"
e = torch.nn.Embedding(1000, 16).cuda()
out = e(y) * 2
PY
(cd "$tmp" && $MEMSIM record --fake -o d.csv -- "$PY" d.py) 2>"$tmp/err" >&2 ||
	fail "record: $(tail -3 "$tmp/err")"
# z's fp16 copy (64 x 120 x 2), y's int64 (64 x 8), torch.ones (256 x 4;
# its Distribution an alias), the embedding (1000 x 16 x 4), e(y) and
# the product (64 x 16 x 4 each)
got=$(awk -F, '$3 == "alloc" { printf "%s ", $5 }' "$tmp/d.csv")
want="15360 512 1024 64000 4096 4096 "
[ "$got" = "$want" ] || fail "allocations: $got, want $want"
finish recorder_tensor_subclass_new
