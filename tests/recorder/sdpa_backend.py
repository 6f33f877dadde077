"""scaled_dot_product_attention under torch.nn.attention.sdpa_kernel
(tests/recorder_torchcuda.sh): causal self-attention, bf16, batch 4, 8
heads, 1024 tokens, head dimension 64, on the backend named; on a GPU
it prints torch.cuda.max_memory_allocated() and max_memory_reserved().
    python3 sdpa_backend.py math|flash|eff|cudnn"""
import torch, sys
from torch.nn.attention import sdpa_kernel, SDPBackend
q = torch.randn(4, 8, 1024, 64, device="cuda", dtype=torch.bfloat16)
be = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION, "eff": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[sys.argv[1]]

with sdpa_kernel(be):
    o = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
print(sys.argv[1], "peaks", torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved())
