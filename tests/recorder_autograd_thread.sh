#!/bin/sh
# memsim record --fake: torch.tensor(data, device="cuda") on the autograd
# engine's device thread, where a CUDA backward runs, ran CUDA's own
# empty_strided ("Could not run 'aten::empty_strided' with arguments from
# the 'CUDA' backend"): the fake mode's only-lift-CPU-tensors flag
# (FakeTensorMode.__enter__) is the thread's own, and that thread
# inherits the dispatch modes without it.  A custom autograd Function's
# backward that makes a constant (here the first node of the backward,
# before any op on that thread) stopped the recording.
# flex_attention called without torch.compile (titans-pytorch's
# train_mac.py calls it through its own torch.compile) stopped with "no
# rule registered for HigherOrderOperator flex_attention": the recorder's
# modes did not take higher-order operators.  Its eager run is PyTorch's
# CompositeExplicitAutograd kernels (sdpa_dense forward, its backward),
# which materialize the B x H x L x S scores: recorded op by op, the
# scores' 2 MiB blocks in the forward and in the backward.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/f.py" <<'PY'
import torch
class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2
    @staticmethod
    def backward(ctx, g):
        c = torch.tensor(-float("inf"), dtype=g.dtype, device=g.device)
        return torch.where(g > 0, g, c)
x = torch.randn(1024, device="cuda", requires_grad=True)
F.apply(x).backward(torch.ones(1024, device="cuda"))
print("custom", tuple(x.grad.shape), x.grad.device.type)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/f.csv" -- "$PY" f.py) \
	>"$tmp/err" 2>&1 || fail "custom backward: $(tail -3 "$tmp/err")"
grep -qxF "custom (1024,) cuda" "$tmp/err" || fail "no result: $(cat "$tmp/err")"
"$PY" -c "import torch.nn.attention.flex_attention" 2>/dev/null || {
	echo "no flex_attention in this PyTorch: its half skipped"; finish autograd_thread; exit 0; }
cat >"$tmp/g.py" <<'PY'
import torch
from torch.nn.attention.flex_attention import flex_attention
q, k, v = (torch.randn(2, 4, 256, 64, device="cuda", requires_grad=True)
           for _ in range(3))
out = flex_attention(q, k, v, score_mod=lambda s, b, h, m, n: s + (m - n))
out.sum().backward()
print("flex", tuple(out.shape), tuple(q.grad.shape))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/g.csv" -- "$PY" g.py) \
	>"$tmp/err" 2>&1 || fail "eager flex_attention: $(tail -3 "$tmp/err")"
grep -qxF "flex (2, 4, 256, 64) (2, 4, 256, 64)" "$tmp/err" || \
	fail "no result: $(cat "$tmp/err")"
# the scores, 2 x 4 x 256 x 256 fp32, materialized forward and backward
fw=$(awk -F, '$3=="alloc" && $5==2097152 && $7!="gradient"' "$tmp/g.csv" | wc -l)
bw=$(awk -F, '$3=="alloc" && $5==2097152 && $7=="gradient"' "$tmp/g.csv" | wc -l)
[ "$fw" -ge 2 ] && [ "$bw" -ge 2 ] || \
	fail "scores not materialized: $fw forward, $bw backward blocks of 2 MiB"
finish autograd_thread
