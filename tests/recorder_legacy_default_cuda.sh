#!/bin/sh
# memsim record --fake: torch.Tensor(...) after
# torch.set_default_tensor_type('torch.cuda.FloatTensor') makes CUDA
# tensors.  The base constructor (base_tensor_ctor, torch/csrc/utils/
# tensor_new.cpp) builds on the default tensor type's dispatch key and
# scalar type, which the recorder's set_default_device("cuda") left on the
# CPU: nerf-pytorch's raw2outputs cats a torch.Tensor([1e10]) to CUDA
# distances (a device mismatch), and its training images
# (torch.Tensor(numpy array)) were host tensors.  No arguments: an empty
# tensor; sizes (ints or a torch.Size): uninitialized; a sequence or
# array: its values; all on the GPU in the default dtype; a tensor: an
# alias whatever its device; device="cpu" and a number refused.  A host type set again
# gives host tensors.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import numpy as np, torch
torch.set_default_tensor_type('torch.cuda.FloatTensor')
a = torch.Tensor([1e10])
b = torch.Tensor(np.zeros((256, 256), dtype=np.float64))
c = torch.Tensor(64, 64)
d = torch.Tensor(torch.Size([32, 32]))
e = torch.Tensor(b)
f = torch.Tensor()
x = torch.cat([torch.zeros(4, 3), a.expand(4, 1)], -1)
print("devs", a.device, b.device, c.device, d.device, e.device, f.device,
      x.device)
print("kinds", b.dtype, tuple(b.shape), e.data_ptr() == b.data_ptr(),
      tuple(f.shape))
try:
    torch.Tensor(2, device="cpu")
except RuntimeError as err:
    print("refused", "expects device type: cuda" in str(err))
try:
    torch.Tensor(3.5)
except TypeError as err:
    print("scalar", "must be a sequence" in str(err))
torch.set_default_tensor_type(torch.FloatTensor)
print("host", torch.Tensor([1.0, 2.0]).device)
PY
(cd "$tmp" && PYTHONUNBUFFERED=1 $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "devs cuda:0 cuda:0 cuda:0 cuda:0 cuda:0 cuda:0 cuda:0" \
	"kinds torch.float32 (256, 256) True (0,)" "refused True" "scalar True" \
	"host cpu"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
# a (4 bytes), b (256*256 floats), c (64*64), d (32*32), the zeros (4*3)
# and the cat (4*4); e is b's alias, f empty
got=$(copies_seq "$tmp/a.csv")
want="4 262144 16384 4096 48 64"
[ "$got" = "$want" ] || fail "allocations: $got"
finish recorder_legacy_default_cuda.sh
