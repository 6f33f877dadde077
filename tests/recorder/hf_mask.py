# tests/recorder_hfmask.sh: a Llama's training step with an all-ones
# attention mask (as a tokenizer or a collator without padding gives it)
# or with none (argv[1]: ones | none).
import sys
import torch
from transformers import LlamaConfig, LlamaForCausalLM
cfg = LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=1000, attn_implementation="sdpa")
torch.manual_seed(0)
m = LlamaForCausalLM(cfg).cuda()
ids = torch.randint(0, 1000, (2, 256))
x, y = ids.cuda(), ids.cuda()
mask = torch.ones_like(x) if sys.argv[1] == "ones" else None
out = m(input_ids=x, labels=y, attention_mask=mask)
out.loss.backward()
