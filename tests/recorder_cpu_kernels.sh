#!/bin/sh
# memsim record --fake --values cpu computes the GPU's tensors on the
# CPU, op by op; a few ops the CUDA build dispatches to have no CPU
# kernel, and their values were lost (values:unknown) with every value
# computed from them: cudnn_batch_norm (a CUDA build's training-mode
# BatchNorm) and its backward, and autocast's softmax of a half tensor
# to float (_softmax with half_to_float) and its backward.  Ultralytics'
# YOLO (BatchNorm everywhere, its DFL's softmax under autocast) lost its
# assigner's positive anchors so.  Each is now computed by the CPU's own
# op (Values' FALLBACK): native_batch_norm, the float softmax.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
torch.manual_seed(0)
x = torch.randn(4, 3, 5, 5)
w, b = torch.rand(3) + 0.5, torch.randn(3)
rm, rv = torch.zeros(3), torch.ones(3)
ref = torch.ops.aten.native_batch_norm(x.half().float(), w, b, rm.clone(),
                                       rv.clone(), True, 0.1, 1e-5)
xc = x.cuda().half().requires_grad_()
rmc, rvc = rm.cuda(), rv.cuda()
out, mean, invstd, reserve = torch.ops.aten.cudnn_batch_norm(
    xc, w.cuda(), b.cuda(), rmc, rvc, True, 0.1, 1e-5)
print("bn", (out > 0.5).nonzero().shape[0],
      (ref[0].half() > 0.5).nonzero().shape[0])
print("running", bool((rmc.cpu() - ref[1] * 0.1).abs().max() < 1e-3))
gi, gw, gb = torch.ops.aten.cudnn_batch_norm_backward(
    xc, torch.ones_like(out), w.cuda(), rmc, rvc, mean, invstd, 1e-5,
    reserve)
rg = torch.ops.aten.native_batch_norm_backward(
    torch.ones(4, 3, 5, 5), x.half().float(), w, None, None, ref[1],
    ref[2], True, 1e-5, [True, True, True])
print("bwd", (gb > 0).nonzero().shape[0], (rg[2] > 0).nonzero().shape[0])
s = torch.ops.aten._softmax(xc, 1, True)
sr = torch.softmax(x.half().float(), 1)
print("softmax", s.dtype, (s > 0.5).nonzero().shape[0],
      (sr > 0.5).nonzero().shape[0])
g = torch.ops.aten._softmax_backward_data(s - 0.3, s, 1, torch.float16)
gr = torch.ops.aten._softmax_backward_data(sr - 0.3, sr, 1, torch.float32)
print("softmax bwd", g.dtype, (g > 0).nonzero().shape[0],
      (gr.half() > 0).nonzero().shape[0])
PY
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "recording: $(tail -3 "$tmp/err")"
for w in bn bwd softmax "softmax bwd"; do
	line=$(grep "^$w " "$tmp/err") || fail "no $w: $(cat "$tmp/err")"
	set -- $line
	shift $(($# - 2))
	[ "$1" = "$2" ] || fail "$w: $line (the CPU's count last)"
done
grep -qxF "running True" "$tmp/err" || fail "running mean: $(cat "$tmp/err")"
grep -q 'softmax torch.float32 ' "$tmp/err" || fail "softmax dtype: $(cat "$tmp/err")"
$MEMSIM info "$tmp/a.csv" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
grep -q 'values:unknown\|nonzero' "$tmp/info" && \
	fail "values lost: $(grep 'values:unknown\|nonzero' "$tmp/info")"
finish recorder_cpu_kernels.sh
