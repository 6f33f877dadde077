#!/bin/sh
# memsim record --fake --values cpu: the backward of cuDNN's, flash's and
# the memory-efficient attention (values.py's _sdpa_bwd, on the CPU)
# took softmax of the scores, NaN on a query row that the mask hides
# every key from (a left-padded position of a padded batch under a
# causal mask), and so NaN in every gradient, where PyTorch's math path
# (_safe_softmax: probabilities 0 on such a row, the forward's own
# stand-in) and the fused kernels are finite.  TRL's GKD trainer, which
# left-pads its generated batches, had NaN weights after its first step.
# The gradients now equal the math path's autograd on the CPU.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/s.py" <<'PY'
import torch
import torch.nn.functional as F
torch.manual_seed(0)
q, k, v = (torch.randn(1, 2, 6, 16) for _ in range(3))
keep = torch.ones(6, 6, dtype=torch.bool).tril()
keep[:2] = False          # two query rows attend to nothing (left padding)
qc, kc, vc = (t.cuda().bfloat16().requires_grad_() for t in (q, k, v))
o = F.scaled_dot_product_attention(qc, kc, vc, attn_mask=keep.cuda()[None, None])
o.float().sum().backward()
qr, kr, vr = (t.bfloat16().float().requires_grad_() for t in (q, k, v))
with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
    orf = F.scaled_dot_product_attention(qr, kr, vr, attn_mask=keep[None, None])
orf.sum().backward()
print("fwd", bool(torch.isfinite(o).all()),
      bool((o.float().cpu() - orf).abs().max() < 0.05))
for n, a, b in (("dq", qc, qr), ("dk", kc, kr), ("dv", vc, vr)):
    print(n, bool(torch.isfinite(a.grad).all()),
          bool((a.grad.float().cpu() - b.grad).abs().max() < 0.05))
PY
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/s.csv" -- "$PY" s.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "fwd True True" "dq True True" "dk True True" "dv True True"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_sdpa_masked_rows.sh
