"""The benchmark of `memsim fit` (docs/recording.md, "Recording many
values"): an HF Llama with Llama 3.2 1B's shapes (or, with 70b, Llama
70B's) from a config (no weights), bf16, one AdamW step at batch B and
sequence length SEQ:
    memsim fit --cap 80GiB --vary B=1..64 -- \
        python3 llama_fit.py {B} [SEQ (4096)] [1b|70b]"""
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
batch = int(sys.argv[1])
seq = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
size = sys.argv[3] if len(sys.argv) > 3 else "1b"
cfgs = {"1b": dict(hidden_size=2048, intermediate_size=8192,
                   num_hidden_layers=16, num_attention_heads=32,
                   num_key_value_heads=8, tie_word_embeddings=True),
        "70b": dict(hidden_size=8192, intermediate_size=28672,
                    num_hidden_layers=80, num_attention_heads=64,
                    num_key_value_heads=8)}
cfg = LlamaConfig(**cfgs[size], vocab_size=128256,
                  torch_dtype=torch.bfloat16)
with torch.device("cuda"):
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
out = model(input_ids=ids, labels=ids)
out.loss.backward()
opt.step()
opt.zero_grad()
