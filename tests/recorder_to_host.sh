#!/bin/sh
# memsim record --fake: two rules of PyTorch's CUDA kernels that a VAE
# tutorial's training step (yunjey's pytorch-tutorial) showed missing,
# request by request against its H200 snapshot
# (traces/memsim_record/dispatch.py):
# - F.binary_cross_entropy with a reduction (binary_cross_entropy_cuda):
#   the loss is at::empty_like(input), reduced into a new scalar that is
#   copied back into it (resize_as_ keeps the storage) and freed, so the
#   scalar returned keeps an input-sized block; reduction="none" has no
#   scalar.
# - A GPU tensor to the host with another dtype or from a non-dense
#   source (torchvision's save_image: grid...permute(1, 2, 0)
#   .to("cpu", torch.uint8)): copy_kernel_cuda's temporaries make the
#   source contiguous on the GPU first; a contiguous source, or a dense
#   one of the same dtype, needs none.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/vae.py" <<'PY'
import torch
import torch.nn as nn
import torch.nn.functional as F

dec = nn.Sequential(nn.Linear(20, 400), nn.ReLU(), nn.Linear(400, 784)).cuda()
z = torch.randn(128, 20, device="cuda")
x = torch.rand(128, 784, device="cuda")
y = torch.sigmoid(dec(z))
loss = F.binary_cross_entropy(y, x, reduction="sum")     # line 9
loss.backward()
per = F.binary_cross_entropy(y.detach(), x, reduction="none")  # line 11
g = torch.rand(3, 242, 482, device="cuda")
a = g.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", torch.uint8)  # 13
b = g.to("cpu", torch.uint8)          # 14: contiguous: converted on the host
c = g.permute(1, 2, 0).cpu()          # 15: dense, same dtype: a memcpy
d = g[:, ::2].cpu()                   # 16: not dense: made contiguous first
e = g.permute(1, 2, 0).to("cpu", non_blocking=True)   # 17: dense: none
print(a.shape, b.dtype, c.shape, d.shape, e.shape)
PY
$MEMSIM record --fake -o "$tmp/v.csv" -- "$PY" "$tmp/vae.py" >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
# the loss's block: 128 x 784 fp32, allocated at line 9, alive past backward
awk -F, '$3 == "alloc" && $8 ~ /vae.py:9 / {print $5}' "$tmp/v.csv" >"$tmp/l9"
grep -qx 401408 "$tmp/l9" || fail "no input-sized loss block at line 9: $(cat "$tmp/l9")"
n=$(grep -c ',binary_cross_entropy_cuda reduction$' "$tmp/v.csv")
[ "$n" -eq 1 ] || fail "$n reduction scalars, not 1 (sum once, none never)"
awk -F, '$3 == "alloc" && $8 ~ /vae.py:11 / {print $5}' "$tmp/v.csv" >"$tmp/l11"
[ "$(cat "$tmp/l11")" = 401408 ] || fail "reduction none: $(cat "$tmp/l11")"
# the host copies' temporaries: the permuted fp32 grid (line 13) and the
# strided slice (line 16), 3 x 242 x 482 and 3 x 242 x 241 floats
awk -F, '$8 == "copy_kernel_cuda source for the host" {print $5}' "$tmp/v.csv" >"$tmp/h"
printf '1399728\n699864\n' | cmp -s - "$tmp/h" ||
	fail "host copies' temporaries: $(tr '\n' ' ' <"$tmp/h"), not 1399728 699864"
finish recorder_to_host.sh
