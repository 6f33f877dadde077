"""Workloads no test had seen when they were written: HF transformers
models built from configs (random weights, nothing downloaded) and
torchvision models.  python3 hf_models.py NAME"""
import sys
import torch
import torch.nn.functional as F

name = sys.argv[1]
dev = "cuda"
torch.manual_seed(0)


def adamw(m):
    return torch.optim.AdamW(m.parameters(), lr=1e-4)


def lm_steps(model, batches, dtype=None, scaler=None, steps=3):
    opt = adamw(model)
    for i in range(steps):
        b, t = batches[i % len(batches)]
        x = torch.randint(0, model.config.vocab_size, (b, t), device=dev)
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            out = model(input_ids=x, labels=x)
        if scaler:
            scaler.scale(out.loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            out.loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)


if name == "hf_t5":
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=8000, d_model=512, d_ff=1024, num_layers=4,
                   num_decoder_layers=4, num_heads=8, d_kv=64,
                   decoder_start_token_id=0, pad_token_id=0)
    m = T5ForConditionalGeneration(cfg).to(dev)
    opt = adamw(m)
    for i, (b, s, t) in enumerate([(8, 256, 64), (8, 192, 96), (8, 256, 64)]):
        src = torch.randint(0, 8000, (b, s), device=dev)
        tgt = torch.randint(0, 8000, (b, t), device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = m(input_ids=src, labels=tgt).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
elif name == "hf_bert":
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(vocab_size=12000, hidden_size=512, num_hidden_layers=6,
                     num_attention_heads=8, intermediate_size=2048)
    m = BertForMaskedLM(cfg).to(dev)
    lm_steps(m, [(16, 128), (16, 200), (16, 96), (16, 256)],
             dtype=torch.float16, scaler=torch.amp.GradScaler(), steps=4)
elif name == "hf_llama_gen":
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=16000, hidden_size=512, intermediate_size=1408,
                      num_hidden_layers=4, num_attention_heads=8,
                      num_key_value_heads=2)
    m = LlamaForCausalLM(cfg).to(dev, torch.bfloat16).eval()
    with torch.no_grad():
        for b, t in [(4, 100), (2, 300)]:
            x = torch.randint(0, 16000, (b, t), device=dev)
            m.generate(x, max_new_tokens=24, do_sample=False,
                       pad_token_id=0)
elif name == "hf_gpt2_ckpt":
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=10000, n_embd=512, n_layer=6, n_head=8,
                     n_positions=512)
    m = GPT2LMHeadModel(cfg).to(dev)
    m.gradient_checkpointing_enable()
    m.config.use_cache = False
    lm_steps(m, [(8, 512), (8, 384)], steps=3)
elif name == "tv_effnet":
    import torchvision
    m = torchvision.models.efficientnet_b0(num_classes=100).to(dev)
    m = m.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler()
    for i in range(3):
        x = torch.randn(32, 3, 160, 160, device=dev).to(
            memory_format=torch.channels_last)
        y = torch.randint(0, 100, (32,), device=dev)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(m(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
elif name == "tv_mobile_infer":
    import torchvision
    m = torchvision.models.mobilenet_v3_large().to(dev).eval().half()
    with torch.no_grad():
        for b in [1, 8, 64, 16, 128, 4]:
            x = torch.randn(b, 3, 224, 224, device=dev, dtype=torch.half)
            m(x)
            if b == 128:
                torch.cuda.empty_cache()
else:
    raise SystemExit("unknown workload " + name)
torch.cuda.synchronize()
