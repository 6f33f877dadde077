#!/bin/sh
# memsim record --fake: the attention backwards' temporaries under
# torch.use_deterministic_algorithms(True) (not warn_only), where
# _flash_attention_backward passes deterministic to mha_bwd and
# _efficient_attention_backward sets p.num_splits_key = 1:
# - flash: dq_accum is at::zeros({nsplits, B, seqlen_q_rounded, H,
#   head_size_rounded}) in fp32, nsplits = (SMs + B*H - 1) / (B*H):
#   B 2, H 8, S 256, D 64 bf16 on the H200 (132 SMs): 9 splits of
#   2*256*8*64*4 = 1048576 bytes, where one was recorded;
# - memory-efficient, fp16, D 256 (a kernel whose gK/gV are staged,
#   kMaxK 65536 > kBlockSizeI 128), B 1, H 2, S 1024, an additive mask:
#   the workspace per batch and head is gQ's 8*4*(4 + 128*64) floats and
#   gK's and gV's num_splits_key*64*256 each: 16 splits by the heuristic,
#   6292480 bytes; 1 split deterministic, 2360320.
# accelerate's benchmarks/fsdp2/main.py sets deterministic algorithms
# around its Qwen2 (flash attention once cuDNN attention is ruled out:
# tests/recorder_sdpa_deterministic.sh).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/b.py" <<'PY'
import sys
import torch
import torch.nn.functional as F
torch.backends.cuda.enable_cudnn_sdp(False)
if sys.argv[2] == "on":
    torch.use_deterministic_algorithms(True)
if sys.argv[1] == "flash":
    q, k, v = (torch.randn(2, 8, 256, 64, device="cuda", dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
else:
    q, k, v = (torch.randn(1, 2, 1024, 256, device="cuda", dtype=torch.float16,
                           requires_grad=True) for _ in range(3))
    m = torch.zeros(1, 1, 1024, 1024, device="cuda", dtype=torch.float16)
    F.scaled_dot_product_attention(q, k, v, attn_mask=m).sum().backward()
PY
rows() { awk -F, -v s="$2" '$3 == "alloc" && index($8, s) == 1 {
	printf "%s%s", t, $5; t = " " } END { print "" }' "$1"; }
for c in flash eff; do
	for d in off on; do
		(cd "$tmp" && CUBLAS_WORKSPACE_CONFIG=:4096:8 $MEMSIM record \
			--fake -o "$tmp/$c-$d.csv" -- "$PY" b.py $c $d) \
			>"$tmp/err" 2>&1 || fail "record $c $d: $(tail -3 "$tmp/err")"
	done
done
# softmax_d (2*256*8 floats), then dq_accum
got=$(rows "$tmp/flash-off.csv" "_flash_attention_backward temporaries")
[ "$got" = "16384 1048576" ] || fail "flash: $got"
got=$(rows "$tmp/flash-on.csv" "_flash_attention_backward temporaries")
[ "$got" = "16384 $((9 * 1048576))" ] || fail "flash deterministic: $got"
# delta (1*2*1024 floats), then the workspace
got=$(rows "$tmp/eff-off.csv" "_efficient_attention_backward temporaries")
[ "$got" = "8192 6292480" ] || fail "efficient: $got"
got=$(rows "$tmp/eff-on.csv" "_efficient_attention_backward temporaries")
[ "$got" = "8192 2360320" ] || fail "efficient deterministic: $got"
finish recorder_sdpa_deterministic_ws.sh
