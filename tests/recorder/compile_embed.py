# A small GPT-like model whose backward ends in embedding gradients, as
# nanoGPT's does (tests/recorder_compile_tune.sh): token and position
# embeddings, a LayerNorm, a Linear, the head tied to the token
# embedding; the forward returns its logits and the loss, so the backward
# is given a zero gradient for the logits.  Compiled, two training steps.
#   python3 compile_embed.py
import torch
import torch.nn as nn
import torch.nn.functional as F

V, D, T, B = 512, 64, 32, 4


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(T, D)
        self.ln = nn.LayerNorm(D)
        self.fc = nn.Linear(D, D)
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx, y):
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        x = x + F.gelu(self.fc(self.ln(x)))
        logits = self.head(x)
        return logits, F.cross_entropy(logits.view(-1, V), y.view(-1))


m = torch.compile(Model().cuda())
x = torch.randint(0, V, (B, T), device="cuda")
y = torch.randint(0, V, (B, T), device="cuda")
for _ in range(2):
    logits, loss = m(x, y)
    loss.backward()
print("done")
