# transformers' GPT-2 (2 layers, 128 wide, vocab 8192, from its config:
# no weights), compiled, 3 AdamW steps under bf16 autocast with the loss
# computed by the model (labels=): its loss function logs a warning
# (logger.warning_once, "loss_type=None ... default loss") inside the
# compiled forward, a graph break.  (The code below is what the H200
# ran: tests/data/compile/real.tsv.)
import torch, transformers
cfg = transformers.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=8192, n_positions=256)
torch.manual_seed(0)
m = transformers.GPT2LMHeadModel(cfg).cuda()
o = torch.optim.AdamW(m.parameters())
c = torch.compile(m)
for i in range(3):
    x = torch.randint(0, 8192, (8, 256), device="cuda")
    with torch.autocast("cuda", torch.bfloat16):
        loss = c(input_ids=x, labels=x).loss
    loss.backward(); o.step(); o.zero_grad()
    print("step", i, loss.item())
print("peaks", torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved())
