#!/bin/sh
# memsim record --fake, scaled_dot_product_attention with a mask whose
# last dimension is not at stride 1.  sdp_utils'
# check_last_dim_stride_equals_1_dense refuses every fused backend on the
# GPU for such a mask (as the program passed it, before a boolean one is
# made additive): a mask expanded along the keys, as transformers'
# bidirectional mask is under Dynamo (`q_idx >= 0` of shape (b, 1, q, 1)
# expanded to (b, 1, q, kv)), leaves the math path; the same mask made
# contiguous takes memory-efficient attention (fp32) or cuDNN's (bf16 on
# an H100).  The recording had taken the fused kernels for both.  Skips
# (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/mask.py" <<'PY'
import torch
import torch.nn.functional as F

def run(dtype, contiguous):
    q, k, v = (torch.randn(2, 4, 64, 32, device="cuda", dtype=dtype)
               for _ in range(3))
    i = torch.arange(64, device="cuda")
    mask = (i[None, None, :, None] >= 0).expand(2, 1, 64, 64)
    if contiguous:
        mask = mask.contiguous()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    print("stride", mask.stride(-1), "peak",
          torch.cuda.max_memory_allocated() - before)

for dtype in (torch.float32, torch.bfloat16):
    for contiguous in (False, True):
        torch.cuda.reset_peak_memory_stats()
        run(dtype, contiguous)
PY
(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o mask.csv -- "$PY" mask.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# the peak of each call (the program's own max_memory_allocated): the
# math path's weights and, at fp32, the cuBLAS workspace of its first
# matmul on an H100 (32 MiB) for the expanded masks; the fused kernels'
# outputs and log-sum-exps for the contiguous ones
got=$(grep "^stride " "$tmp/out" | tr '\n' ' ')
want="stride 0 peak 33948672 stride 1 peak 98304 stride 0 peak 574464 stride 1 peak 50688 "
[ "$got" = "$want" ] || fail "peaks: $got, want $want"
grep -q ",cudnn run_cudnn_SDP_fprop workspace" "$tmp/mask.csv" ||
	fail "no cuDNN attention for bf16 with a contiguous mask"
finish recorder_sdpa_mask_stride
