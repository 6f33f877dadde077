# A beam search written as transformers' _beam_search writes its stopping
# test (_check_early_stop_heuristic, _beam_search_has_unfinished_sequences),
# on a tiny model, and a cache grown from torch.tensor([]) under
# torch.inference_mode (DynamicLayer.lazy_initialization): memsim record
# --fake must run every step to the max length and record both;
# tests/recorder_generate.sh checks the trace.
import torch
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(s, vocab=1000, dim=64):
        super().__init__()
        s.emb = nn.Embedding(vocab, dim)
        s.head = nn.Linear(dim, vocab, bias=False)

    def forward(s, ids):
        return s.head(s.emb(ids[:, -1]))


def beam_search(m, ids, beams, max_new_tokens):
    B, t = ids.shape
    max_length = t + max_new_tokens
    dev = ids.device
    ids = ids.repeat_interleave(beams, 0)
    run_scores = torch.zeros(B, beams, device=dev)
    beam_scores = torch.full((B, beams), -1.0e9, device=dev)
    finished = torch.zeros(B, beams, dtype=torch.bool, device=dev)
    unsatisfied = torch.ones(B, 1, dtype=torch.bool, device=dev)
    steps = 0
    while True:
        logp = m(ids).float().log_softmax(-1).view(B, -1)
        logp = logp + run_scores.view(B * beams, 1).view(B, beams, 1) \
            .expand(B, beams, 1000).reshape(B, -1)
        top, idx = torch.topk(logp, beams)
        src = (idx // 1000) + torch.arange(B, device=dev)[:, None] * beams
        ids = torch.cat([ids[src.view(-1)], (idx % 1000).view(-1, 1)], -1)
        run_scores = top
        hits = torch.full((B, beams), ids.shape[1] >= max_length,
                          dtype=torch.bool, device=dev)
        # a finished beam's score would replace a -1e9; none finishes here
        finished = torch.take_along_dim(
            torch.cat([finished, hits & False], 1), idx % beams, 1)
        worst = torch.where(finished, beam_scores.min(1, keepdim=True)[0],
                            -1.0e9)
        best = run_scores[:, :1] / (ids.shape[1] - t)
        unsatisfied = unsatisfied & torch.any(best > worst, -1, True)
        steps += 1
        # improvement possible & open beam & a valid continuation
        go = torch.any(unsatisfied) & ~(torch.all(finished) & False) & \
            ~torch.all(hits)
        if not go:
            break
    return ids, steps


m = TinyLM().cuda().eval()
with torch.no_grad():
    for b, t, n in [(2, 10, 6), (3, 20, 4)]:
        x = torch.randint(0, 1000, (b, t), device="cuda")
        out, steps = beam_search(m, x, 4, n)
        print("steps", steps, "shape", tuple(out.shape))
with torch.inference_mode():
    keys = torch.tensor([], dtype=torch.float16, device="cuda")
    for i in range(3):
        keys = torch.cat([keys, torch.ones(1024, dtype=torch.float16,
                                           device="cuda")])
    print("keys", tuple(keys.shape))
