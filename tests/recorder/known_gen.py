# A generate() loop written as transformers' _sample writes it, on a tiny
# model: memsim record --fake must see its max-length stop
# (traces/memsim_record/known.py); tests/recorder_known.sh checks the trace.
import torch
import torch.nn as nn

class TinyLM(nn.Module):
    def __init__(s, vocab=1000, dim=64):
        super().__init__()
        s.emb = nn.Embedding(vocab, dim)
        s.head = nn.Linear(dim, vocab, bias=False)
    def forward(s, ids):
        return s.head(s.emb(ids[:, -1]))

def generate(m, ids, max_new_tokens, eos=2):
    """transformers' _sample: greedy, MaxLengthCriteria and an EOS
    criterion ORed into StoppingCriteriaList, stop on max() == 0."""
    B = ids.shape[0]
    max_length = ids.shape[1] + max_new_tokens
    eos = torch.tensor([eos], device=ids.device)
    unfinished = torch.ones(B, dtype=torch.long, device=ids.device)
    finished = False
    steps = 0
    while not finished:
        logits = m(ids)
        nxt = torch.argmax(logits.float(), dim=-1)
        nxt = nxt * unfinished + 0 * (1 - unfinished)
        ids = torch.cat([ids, nxt[:, None]], dim=-1)
        done = torch.full((B,), False, device=ids.device, dtype=torch.bool)
        done = done | torch.full((B,), ids.shape[1] >= max_length,
                                 device=ids.device, dtype=torch.bool)
        done = done | torch.isin(ids[:, -1], eos)
        unfinished = unfinished & ~done
        finished = bool(unfinished.max() == 0)
        steps += 1
    return ids, steps

m = TinyLM().cuda().eval()
with torch.no_grad():
    for b, t, n in [(4, 10, 5), (2, 30, 3)]:
        x = torch.randint(0, 1000, (b, t), device="cuda")
        out, steps = generate(m, x, n)
        print("steps", steps, "shape", tuple(out.shape))
