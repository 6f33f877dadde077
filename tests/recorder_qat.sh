#!/bin/sh
# memsim record --fake: quantization-aware training with torch.ao's
# default QAT qconfig (FusedMovingAvgObsFakeQuantize) on the GPU.  Its
# per-channel weight observer registers empty running min and max
# buffers; fused_moving_avg_obs_fake_quant's CUDA kernel sizes them, and
# the scale and zero point, to the channels at the first call.  The meta
# kernel gave the output and mask only, so the buffers stayed empty:
# calculate_qparams answered one channel ("must run observer") and
# torch.ao's convert stopped on min > max.  Now the buffers are sized
# (four allocations of the channels' size, two temporaries of aminmax
# freed before the output and mask), and their values are the host
# rules' after the update, no more the +inf/-inf they start with.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/q.py" <<'PY'
import warnings
import torch
import torch.ao.quantization as tq
warnings.simplefilter("ignore")
m = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU()).cuda()
m.qconfig = tq.get_default_qat_qconfig("fbgemm")
tq.prepare_qat(m, inplace=True)
y = m(torch.randn(2, 3, 8, 8, device="cuda"))
y.sum().backward()
wfq = m[0].weight_fake_quant
obs = wfq.activation_post_process
print("buffers", tuple(obs.min_val.shape), tuple(obs.max_val.shape),
      tuple(wfq.scale.shape), tuple(wfq.zero_point.shape))
s, z = wfq.calculate_qparams()
print("qparams", tuple(s.shape))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/q.csv" -- "$PY" q.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "buffers (16,) (16,) (16,) (16,)" "qparams (16,)"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
# in the weight's fake quantizer: the four buffers' allocations (16 x 4
# bytes: min, max, scale, int32 zero point) and aminmax's two
n=$(grep -c ',alloc,[0-9]*,64,0,activation,Sequential.0.weight_fake_quant$' \
	"$tmp/q.csv")
[ "$n" -eq 6 ] || fail "$n allocations of 64 bytes: $(grep alloc "$tmp/q.csv")"
finish recorder_qat.sh
