#!/bin/sh
# memsim record --fake: torch.ao's fake quantization on the GPU without
# the fused observer: FakeQuantize (fake_quantize_per_channel_affine and
# per_tensor_affine, which decompose into the cachemask ops) and the
# learnable fake quantizers (_LearnableFakeQuantize, PyTorch's
# _fake_quantize_learnable_per_tensor_affine and per_channel_affine, and
# their backwards).  None has a fake (meta) kernel: each stopped the
# program ("has no fake (meta) kernel").  Now recorded as
# FakeQuantPerTensorAffine.cpp and FakeQuantPerChannelAffine.cpp allocate:
# Y and a bool mask like the input; the learnable forwards keep Y and free
# the mask; their backwards make dX, dScale_vec and dZeroPoint_vec like X
# and free the two vectors once summed.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/q.py" <<'PY'
import warnings
import torch
import torch.ao.quantization as tq
from torch.ao.quantization._learnable_fake_quantize import _LearnableFakeQuantize
warnings.simplefilter("ignore")
x = torch.randn(64, 32, device="cuda", requires_grad=True)
fq = tq.FakeQuantize(observer=tq.MovingAveragePerChannelMinMaxObserver,
                     quant_min=-128, quant_max=127, dtype=torch.qint8,
                     qscheme=torch.per_channel_symmetric, ch_axis=1).cuda()
y = fq(x)
print("per-channel", tuple(y.shape), tuple(fq.scale.shape))
y.sum().backward()
lq = _LearnableFakeQuantize(observer=tq.MovingAverageMinMaxObserver,
                            quant_min=0, quant_max=255).cuda()
y = lq(x)
y.sum().backward()
print("learnable", tuple(y.shape), tuple(lq.scale.grad.shape))
s = torch.nn.Parameter(torch.rand(32, device="cuda") + 0.1)
z = torch.nn.Parameter(torch.zeros(32, device="cuda"))
y = torch._fake_quantize_learnable_per_channel_affine(x, s, z, 1, -128, 127, 1.0)
y.sum().backward()
print("learnable per-channel", tuple(y.shape), tuple(s.grad.shape))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/q.csv" -- "$PY" q.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "per-channel (64, 32) (32,)" "learnable (64, 32) (1,)" \
	"learnable per-channel (64, 32) (32,)"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
# the three forwards' masks (64 x 32 bools), one each
n=$(awk -F, '$3 == "alloc" && $5 == 2048' "$tmp/q.csv" | wc -l)
[ "$n" -eq 3 ] || fail "$n allocations of 2048 bytes: $(grep alloc "$tmp/q.csv")"
finish recorder_fake_quant.sh
