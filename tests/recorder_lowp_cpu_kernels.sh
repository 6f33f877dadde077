#!/bin/sh
# memsim record --fake --values cpu computes the GPU's tensors on the
# CPU, op by op; a few ops have CUDA kernels for half and bfloat16 but
# CPU kernels without them (AT_DISPATCH's "avg_pool3d_out_frame" not
# implemented for 'BFloat16'), and their values were lost
# (values:unknown) with every value computed from them: nnU-Net's
# ResidualEncoderUNet under bf16 autocast (its 3-D residual blocks'
# AvgPool3d shortcut) lost its logits, and the prediction's isinf check
# and label counts became assumptions.  Such an op is now computed on its
# inputs made float32 and its outputs rounded to the GPU's dtypes
# (Values._run_upcast), as CUDA's kernels compute in float and round
# once.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
import torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(2, 3, 8, 8, 8)
for dt in (torch.bfloat16, torch.float16):
    xr = x.to(dt).float().requires_grad_()
    ref = F.avg_pool3d(xr, 2).to(dt)
    ref.float().sum().backward()
    xc = x.to(dt).cuda().requires_grad_()
    y = F.avg_pool3d(xc, 2)
    y.sum().backward()
    print("fwd", dt, y.dtype, (y > 0.25).nonzero().shape[0],
          (ref > 0.25).nonzero().shape[0])
    g = xc.grad
    print("bwd", dt, g.dtype, (g * (xc > 0) > 0).nonzero().shape[0],
          (xr.grad.to(dt) * (xr > 0) > 0).nonzero().shape[0])
PY
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "recording: $(tail -3 "$tmp/err")"
n=0
for w in fwd bwd; do
	for line in $(grep "^$w " "$tmp/err" | tr ' ' '@'); do
		set -- $(echo "$line" | tr '@' ' ')
		[ "$3" = "$2" ] || fail "$w: $line: output dtype not the input's"
		[ "$4" = "$5" ] || fail "$w: $line (the CPU's count last)"
		n=$((n + 1))
	done
done
[ $n -eq 4 ] || fail "4 lines wanted, $n: $(cat "$tmp/err")"
$MEMSIM info "$tmp/a.csv" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
grep -q 'values:unknown\|nonzero' "$tmp/info" && \
	fail "values lost: $(grep 'values:unknown\|nonzero' "$tmp/info")"
finish recorder_lowp_cpu_kernels.sh
