"""The finished-beam bookkeeping of transformers 5's static-shape beam
search (GenerationMixin._beam_search: _get_running_beams_for_next_iteration
and _update_finished_beams), written out without transformers: beams with
no score yet hold -1e9, a running beam is kept out of the finished ones by
`+ (~finished) * -1e9`, and at the last step the num_beams beams that just
finished outrank the -1e9 placeholders in the merged topk.  Prints the
first step's beams and how many tokens the best finished sequence of each
row holds (-1: never written): on a GPU every row is complete."""
import torch

B, NB, V, P, NEW = 2, 3, 50, 4, 5
K = 2 * NB
L = P + NEW
dev = "cuda"
w = torch.randn(V, V, device=dev)
ids = torch.arange(P, device=dev).repeat(B, 1)
running = torch.full((B, NB, L), -1, dtype=torch.long, device=dev)
running[:, :, :P] = ids[:, None, :]
seqs = running.clone()
run_scores = torch.zeros((B, NB), device=dev)
run_scores[:, 1:] = -1e9
scores = torch.full((B, NB), -1e9, device=dev)
top_mask = torch.cat((torch.ones(NB, dtype=torch.bool),
                      torch.zeros(K - NB, dtype=torch.bool))).to(dev)
first = None
for cur in range(P, L):
    logp = torch.log_softmax(w[running[:, :, cur - 1]], dim=-1)
    acc = (logp + run_scores[:, :, None]).view(B, NB * V)
    top_lp, top_idx = torch.topk(acc, K)
    beam = top_idx // V
    if first is None:
        first = beam.tolist()
    top_seqs = torch.take_along_dim(running, beam[:, :, None], dim=1)
    top_seqs[:, :, cur] = top_idx % V
    hits = torch.full((B, K), cur + 1 >= L, dtype=torch.bool, device=dev)
    r_lp = top_lp + hits.to(torch.float32) * -1e9
    nxt = torch.topk(r_lp, NB)[1]
    running = torch.take_along_dim(top_seqs, nxt[:, :, None], dim=1)
    run_scores = torch.take_along_dim(r_lp, nxt, dim=1)
    done = hits & top_mask[None, :]
    f_lp = top_lp + (~done).to(torch.float32) * -1e9
    m_scores = torch.cat((scores, f_lp), dim=1)
    best = torch.topk(m_scores, NB)[1]
    seqs = torch.take_along_dim(torch.cat((seqs, top_seqs), dim=1), best[:, :, None], dim=1)
    scores = torch.take_along_dim(m_scores, best, dim=1)
print("first", first)
print("generated", (seqs[:, 0] >= 0).sum(-1).tolist(), "of", L)
