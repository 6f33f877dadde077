"""The recording-cost benchmark of --world-size (docs/recording.md,
"Data-parallel jobs"): an HF Llama from a config, bf16, sharded with
FSDP2 (fully_shard per decoder layer and the root) or FSDP (one unit per
decoder layer), one AdamW step, batch 1:
    memsim record --fake --world-size N --rank R -o X.csv -- \
        python3 llama_fsdp.py fsdp2|fsdp tiny|70b [SEQ (4096)]
tiny: 2 layers of hidden 256 (the traces compared at N = 2 ... 512);
70b: Llama-2/3 70B's shapes, vocabulary 128256."""
import sys, torch, torch.distributed as dist
from transformers import LlamaConfig, LlamaForCausalLM
mode, size = sys.argv[1], sys.argv[2]
seq = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
cfgs = {"tiny": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, vocab_size=1000),
        "70b": dict(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                    num_attention_heads=64, num_key_value_heads=8, vocab_size=128256)}
dist.init_process_group("nccl")
torch.cuda.set_device(0)
cfg = LlamaConfig(**cfgs[size], torch_dtype=torch.bfloat16)
with torch.device("cuda"):
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
if mode == "fsdp2":
    from torch.distributed.fsdp import fully_shard
    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)
else:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer
    model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({LlamaDecoderLayer}),
                 device_id=0)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, cfg.vocab_size, (1, seq), device="cuda")
out = model(input_ids=ids, labels=ids)
out.loss.backward()
opt.step()
opt.zero_grad()
