"""A Hugging Face mixture of experts as users train one, tiny (for
tests/recorder_moe_hf.sh): python3 moe_hf.py ops | MIXTRAL_IMPL.

ops: the experts' kernels one at a time, each printing nothing:
  grouped:  torch._grouped_mm in float32 (the fallback path), a
            (64, 32) input times 4 experts' (6, 32) weights transposed
  sort:     torch.sort of 2048 int64 expert ids
  cumsum:   torch.cumsum of 8 int32 counts into int32
  nonzero:  torch.where over a permuted one-hot mask's row (2, 16)
sdpa: scaled_dot_product_attention under bf16 autocast on fp32 queries
  (4, 8, 256, 64) and grouped keys and values (4, 4, 256, 64), as
  Qwen3-MoE's q/k-normed attention calls it, and its backward
index: the backward of x[perm] (the experts' gather of their rows),
  x (64, 32) fp32, perm 64 longs
grouped_mm / eager: a one-layer Mixtral (4 experts, top-2) from its
config, float32 weights, one forward and backward under bf16 autocast
and an AdamW step, with that experts implementation."""
import sys

import torch

what = sys.argv[1]
dev = "cuda"
if what == "ops":
    a = torch.randn(64, 32, device=dev)
    w = torch.randn(4, 6, 32, device=dev)
    offs = torch.tensor([16, 32, 48, 64], dtype=torch.int32, device=dev)
    torch.cuda.synchronize()
    out = torch._grouped_mm(a, w.transpose(-2, -1), offs=offs)
    del out
    torch.cuda.synchronize()
    ids = torch.randint(0, 8, (2048,), device=dev)
    torch.cuda.synchronize()
    v, i = torch.sort(ids)
    del v, i
    torch.cuda.synchronize()
    counts = torch.ones(8, dtype=torch.int32, device=dev)
    torch.cuda.synchronize()
    c = torch.cumsum(counts, dim=0, dtype=torch.int32)
    del c
    torch.cuda.synchronize()
    top = torch.arange(32, device=dev).reshape(16, 2) % 4
    mask = torch.nn.functional.one_hot(top, num_classes=5).permute(2, 1, 0)
    torch.cuda.synchronize()
    pos, tok = torch.where(mask[1])
    print("rows", pos.numel())
elif what == "index":
    x = torch.randn(64, 32, device=dev, requires_grad=True)
    perm = torch.randperm(64, device=dev)
    y = x[perm]
    g = torch.ones(64, 32, device=dev)
    torch.cuda.synchronize()
    y.backward(g)
elif what == "sdpa":
    q = torch.randn(4, 8, 256, 64, device=dev, requires_grad=True)
    k = torch.randn(4, 4, 256, 64, device=dev, requires_grad=True)
    v = torch.randn(4, 4, 256, 64, device=dev, requires_grad=True)
    torch.cuda.synchronize()
    with torch.autocast(dev, dtype=torch.bfloat16):
        o = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=True)
    o.sum().backward()
else:
    from transformers import AutoModelForCausalLM, MixtralConfig
    cfg = MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=48,
                        num_hidden_layers=1, num_attention_heads=2,
                        num_key_value_heads=1, num_local_experts=4,
                        num_experts_per_tok=2, max_position_embeddings=64)
    model = AutoModelForCausalLM.from_config(
        cfg, experts_implementation=what).to(dev)
    print("experts", model.config._experts_implementation)
    opt = torch.optim.AdamW(model.parameters())
    ids = torch.randint(0, 64, (2, 8), device=dev)
    with torch.autocast(dev, dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
