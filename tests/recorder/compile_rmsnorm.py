"""A compiled model whose blocks call F.rms_norm and F.linear with a bias
on 3-D inputs (nanochat's GPT normalizes with F.rms_norm), two training
steps: python3 compile_rmsnorm.py.  Prints the allocator's peaks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        h = F.rms_norm(x, (x.size(-1),))
        return x + self.proj(F.relu(self.fc(h)).square())


class Net(nn.Module):
    def __init__(self, vocab=4096, d=256, n=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        x = F.rms_norm(self.emb(idx), (self.emb.embedding_dim,))
        for b in self.blocks:
            x = b(x)
        logits = self.head(F.rms_norm(x, (x.size(-1),))).float()
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1))


torch.manual_seed(0)
model = Net().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = torch.compile(model, dynamic=False)
for _ in range(2):
    idx = torch.randint(0, 4096, (8, 256), device="cuda")
    loss = step(idx, torch.roll(idx, 1, 1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("peaks", torch.cuda.max_memory_allocated(),
      torch.cuda.max_memory_reserved())
