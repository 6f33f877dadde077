# tests/recorder_seeded_draws.sh: the in-place draws whose fake kernels are
# torch._refs' (exponential_, geometric_, log_normal_, cauchy_) from a
# generator the program made (VAR's gumbel_softmax_with_rng:
# -torch.empty_like(logits).exponential_(generator=rng).log()).
import sys
import torch

values = len(sys.argv) > 1 and sys.argv[1] == "values"
g = torch.Generator(device="cuda")
g.manual_seed(0)
x = torch.empty(4, 1024, device="cuda")
base = torch.cuda.memory_allocated()
for op, a in (("exponential_", ()), ("geometric_", (0.5,)),
              ("log_normal_", ()), ("cauchy_", ())):
    y = getattr(x, op)(*a, generator=g)
    print(op, y is x, tuple(y.shape), torch.cuda.memory_allocated() - base)
gumbels = -torch.empty_like(x).exponential_(generator=g).log()
print("gumbel", tuple(gumbels.shape), torch.cuda.memory_allocated() - base)
if values:
    g.manual_seed(1)
    a = x.exponential_(generator=g).clone()
    g.manual_seed(1)
    b = x.exponential_(generator=g).clone()
    c = x.exponential_(generator=g)
    print("reseeded", bool((a == b).all()), bool((a > 0).all()),
          bool((c != a).any()))
