#!/bin/sh
# memsim record --fake, nn.Linear under torch.inference_mode of an input
# whose leading dimensions do not merge (a latent array broadcast over a
# batch, then permuted: Aurora's Perceiver queries).  at::linear calls
# at::matmul(input, weight.t()), whose should_fold folds the input into
# rows because weight.t() requires grad: a contiguous copy, then mm.
# Under inference mode the recorder runs linear's composite kernel below
# autograd, where weight.t() is a fake tensor that does not require
# grad: matmul took its batched path and no copy was recorded.  Now the
# same requests as under no_grad; a weight that does not require grad
# keeps the batched path.  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/lin.py" <<'PY'
import torch
lin = torch.nn.Linear(64, 128, bias=False).cuda()
x = torch.randn(3, 64, device="cuda").unsqueeze(1).expand(3, 10, 64) \
    .permute(1, 0, 2)
with torch.no_grad():
    y = lin(x)
del y
with torch.inference_mode():
    y = lin(x)
del y
lin.weight.requires_grad_(False)
with torch.inference_mode():
    y = lin(x)
PY
(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o lin.csv -- "$PY" lin.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# the weight and the latents; under no_grad the folded copy (10 x 3 x 64
# fp32), the output, the cuBLAS workspace, the copy freed, the output
# freed; the same under inference_mode; the frozen weight: the output alone
got=$(awk -F, 'NR > 1 { printf "%s%s ", $3 == "alloc" ? "+" : "-", $5 }' "$tmp/lin.csv")
want="+32768 +768 +7680 +15360 +33554432 -7680 -15360 +7680 +15360 -7680 -15360 +15360 "
[ "$got" = "$want" ] || fail "requests: $got, want $want"
finish recorder_inference_linear
