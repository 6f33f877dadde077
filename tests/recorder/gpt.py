"""GPT-style decoder, AdamW training: python3 gpt.py [BATCH] [SEQ] [LAYERS] [DIM] [STEPS]"""
import sys
import torch
import torch.nn as nn
import torch.nn.functional as F

B = int(sys.argv[1]) if len(sys.argv) > 1 else 8
T = int(sys.argv[2]) if len(sys.argv) > 2 else 256
L = int(sys.argv[3]) if len(sys.argv) > 3 else 4
D = int(sys.argv[4]) if len(sys.argv) > 4 else 512
STEPS = int(sys.argv[5]) if len(sys.argv) > 5 else 3
V, H = 8192, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.fc = nn.Linear(D, 4 * D)
        self.out = nn.Linear(4 * D, D)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q, k, v = (z.view(b, t, H, D // H).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, D))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(T, D)
        self.h = nn.ModuleList(Block() for _ in range(L))
        self.lnf = nn.LayerNorm(D)
        self.head = nn.Linear(D, V, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.h:
            x = blk(x)
        return self.head(self.lnf(x))


torch.manual_seed(0)
model = GPT().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(STEPS):
    idx = torch.randint(0, V, (B, T), device="cuda")
    logits = model(idx)
    loss = F.cross_entropy(logits.view(-1, V), idx.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    print("step", step, "loss", loss.item())
