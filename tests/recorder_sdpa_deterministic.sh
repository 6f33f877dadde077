#!/bin/sh
# memsim record --fake: scaled_dot_product_attention under
# torch.use_deterministic_algorithms(True).  sdp_utils'
# can_use_cudnn_attention has check_cudnn_deterministic among its general
# constraints: with deterministic algorithms on (not warn_only) cuDNN
# attention is never taken, and select_sdp_backend goes on to flash
# attention (bf16, no mask, head dimension 64).  The recorder took cuDNN
# attention on sm90 whatever the setting (accelerate's
# benchmarks/fsdp2/main.py, which sets deterministic algorithms, recorded
# ScaledDotProductCudnnAttentionBackward0 for its Qwen2's attention).
# warn_only keeps cuDNN, as PyTorch does.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import sys
import torch
import torch.nn.functional as F
if sys.argv[1] != "off":
    torch.use_deterministic_algorithms(True, warn_only=sys.argv[1] == "warn")
q, k, v = (torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.bfloat16,
                       requires_grad=True) for _ in range(3))
F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
PY
# the attention kernels' own rows: SITE SIZE, in order
rows() { awk -F, '$3 == "alloc" && ($8 ~ /[Cc]udnn|[Ff]lash|[Ee]fficient/) {
	printf "%s%s %s", s, $8, $5; s = "; " } END { print "" }' "$1"; }
for c in off warn on; do
	(cd "$tmp" && CUBLAS_WORKSPACE_CONFIG=:4096:8 $MEMSIM record --fake \
		-o "$tmp/$c.csv" -- "$PY" a.py $c) >"$tmp/err" 2>&1 ||
		fail "record $c: $(tail -3 "$tmp/err")"
done
g=$((2 * 8 * 256 * 64 * 2))     # a gradient of q, k or v
cudnn="cudnn run_cudnn_SDP_fprop workspace 256; backward ScaledDotProductCudnnAttentionBackward0 $g; backward ScaledDotProductCudnnAttentionBackward0 $g; backward ScaledDotProductCudnnAttentionBackward0 $g; cudnn run_cudnn_SDP_bprop workspace 1065216"
for c in off warn; do
	got=$(rows "$tmp/$c.csv")
	[ "$got" = "$cudnn" ] || fail "$c: $got"
done
got=$(rows "$tmp/on.csv")
case $got in
*cudnn*|*Cudnn*) fail "deterministic: cuDNN attention recorded: $got";;
*ScaledDotProductFlashAttentionBackward0*) ;;
*) fail "deterministic: no flash attention: $got";;
esac
finish recorder_sdpa_deterministic.sh
