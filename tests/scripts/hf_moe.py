"""A Hugging Face mixture-of-experts model from a small config, as a user
would train or serve one: python3 hf_moe.py FAMILY MODE [EXPERTS_IMPL]
FAMILY: mixtral qwen2_moe qwen3_moe olmoe deepseek_v3 gpt_oss
MODE: train (2 AdamW steps, fp32 weights, bf16 autocast, batch 4 x 256)
      bf16train (2 AdamW steps, bf16 weights)
      generate (bf16 weights, batch 4 x 256 prompt, 16 new tokens)
EXPERTS_IMPL: Transformers' experts_implementation (default: the
model's, "grouped_mm"); MOE_DEV=cpu runs it on the CPU.  The figures of
docs/corpus.md ("Hugging Face mixtures of experts")."""
import os
import sys
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

DEV = os.environ.get("MOE_DEV", "cuda")
fam, mode = sys.argv[1], sys.argv[2]
impl = sys.argv[3] if len(sys.argv) > 3 else None
V, H, L = 32000, 512, 2
common = dict(vocab_size=V, hidden_size=H, num_hidden_layers=L,
              num_attention_heads=8, num_key_value_heads=4,
              max_position_embeddings=1024, num_experts_per_tok=2)
extra = {
    "mixtral": dict(intermediate_size=1024, num_local_experts=8),
    "qwen2_moe": dict(intermediate_size=1024, moe_intermediate_size=512,
                      shared_expert_intermediate_size=1024, num_experts=8),
    "qwen3_moe": dict(intermediate_size=1024, moe_intermediate_size=512,
                      num_experts=8, head_dim=64),
    "olmoe": dict(intermediate_size=512, num_experts=8),
    "deepseek_v3": dict(intermediate_size=1024, moe_intermediate_size=512,
                        n_routed_experts=8, n_shared_experts=1, n_group=1,
                        topk_group=1, first_k_dense_replace=0,
                        q_lora_rank=256, kv_lora_rank=128,
                        qk_rope_head_dim=32, qk_nope_head_dim=64,
                        v_head_dim=64, num_key_value_heads=8),
    "gpt_oss": dict(intermediate_size=512, num_local_experts=8,
                    head_dim=64, sliding_window=128,
                    layer_types=["sliding_attention", "full_attention"]),
}[fam]
cfg = AutoConfig.for_model(fam, **{**common, **extra})
kw = {} if impl is None else {"experts_implementation": impl}
torch.manual_seed(0)
dtype = torch.float32 if mode == "train" else torch.bfloat16
model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, **kw).to(DEV)
print("transformers", transformers.__version__, "torch", torch.__version__,
      "experts", model.config._experts_implementation,
      "attn", model.config._attn_implementation, flush=True)
ids = torch.randint(0, V, (4, 256), device=DEV)
if mode == "generate":
    model.eval()
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids),
                             max_new_tokens=16, min_new_tokens=16,
                             do_sample=False, pad_token_id=0)
    print("generated", tuple(out.shape))
else:
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(2):
        with torch.autocast(DEV, dtype=torch.bfloat16,
                            enabled=mode == "train"):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print("step", step, "loss", f"{loss.item():.4f}")
if DEV == "cuda":
    print("peak", torch.cuda.max_memory_allocated(),
          torch.cuda.max_memory_reserved())
