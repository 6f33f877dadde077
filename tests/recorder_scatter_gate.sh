#!/bin/sh
# A sparse gate written in place: combine = zeros_like(logits);
# combine.scatter_(1, top_k_indices, top_k_weights), then each expert's
# tokens by (combine > 0)[:, i].nonzero(), as sparse-moe-pytorch's
# TopKRouter and Dispatcher do.  The out-of-place zeros(...).scatter(...)
# followed the routing (Values._rules: the scattered values taken
# nonzero); the in-place scatter_ fell to --dynamic-fraction, half of the
# tokens an expert whatever the top-k: 2048 of 4096 tokens where top-2 of
# 8 experts gives each 1024 under the uniform routing, and a capacity of
# 1024 then dropped 1024 tokens an expert that no real run drops.
# Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/sg.py" <<'PY'
import torch
N, E, K = 4096, 8, 2
x = torch.randn(N, 64, device="cuda")
logits = torch.nn.Linear(64, E, bias=False).cuda()(x)
v, idx = torch.topk(logits, K, dim=1)
w = torch.softmax(v, dim=-1)
cw = torch.zeros_like(logits)
cw.scatter_(1, idx, w)
m = cw > 0.0
print("inplace", [len(m[:, i].nonzero(as_tuple=True)[0]) for i in range(E)])
cw2 = torch.zeros(N, E, device="cuda").scatter(1, idx, w)
print("outofplace", [len((cw2[:, i] > 0).nonzero()) for i in range(E)])
PY
$MEMSIM record --fake -o "$tmp/sg.csv" -- "$PY" "$tmp/sg.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
for want in "inplace [1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024]" \
	"outofplace [1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024]"; do
	grep -qxF "$want" "$tmp/out" || fail "'$want' not in: $(grep 'place' "$tmp/out")"
done
finish recorder_scatter_gate.sh
