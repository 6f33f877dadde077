#!/bin/sh
# memsim record --fake: Tensor.view of a tensor whose strides allow no
# view of the asked shape raises RuntimeError, ATen's ("view size is not
# compatible with input tensor's size and stride ... Use .reshape(...)
# instead."), as on the GPU.  PyTorch's fake kernel for aten::view
# (torch._subclasses.fake_impls._view_meta, through
# torch._refs._reshape_view_helper) raised ValueError ("Cannot view a
# tensor with shape ... as a tensor with shape ..."), so a program that
# catches the RuntimeError and falls back to .reshape died under the
# recorder only; facebookresearch/swav's eval_linear.py accuracy()
# (`correct[:k].view(-1)` of the transposed top-k's eq) stops on the H100
# with the RuntimeError and stopped here with the ValueError.  The script
# prints the same two lines on the GPU.  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/s.py" <<'PY'
import torch
o = torch.randn(32, 1000, device="cuda")
t = torch.zeros(32, dtype=torch.long, device="cuda")
_, p = o.topk(5, 1, True, True)
p = p.t()
c = p.eq(t.view(1, -1).expand_as(p))
try:
    v = c[:5].view(-1)
    print("viewed", v.shape)
except RuntimeError as e:
    print("RuntimeError", "Use .reshape(...) instead." in str(e))
print(c[:5].reshape(-1).shape, c[:1].view(-1).shape)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/s.csv" -- "$PY" s.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -qx "RuntimeError True" "$tmp/out" ||
	fail "view's error: $(grep -v '^memsim' "$tmp/out" | head -3)"
grep -qx "torch.Size(\[160\]) torch.Size(\[32\])" "$tmp/out" ||
	fail "reshape and a legal view: $(grep -v '^memsim' "$tmp/out" | head -3)"
finish recorder_view_stride_error.sh
