# A sparse embedding's gradient and an SGD step on it (facebookresearch/
# dlrm: nn.EmbeddingBag(n, m, mode="sum", sparse=True), torch.optim.SGD).
# The recorder's gradient had no entries (AccumulateGrad cloned it, and a
# fake sparse clone is empty) and SGD's param.add_(grad) stopped (no fake
# kernel for a dense tensor plus a sparse one).  memory_allocated() after
# each step (tests/recorder_sparse.sh checks its differences): every line
# the H200 printed (PyTorch 2.11, 3 December 2026) but the last, whose
# real peak is 303,104 bytes higher (a transient of the backward).
import torch

torch.manual_seed(0)
emb = torch.nn.EmbeddingBag(100000, 64, mode="sum", sparse=True).cuda()
lin = torch.nn.Linear(64, 1).cuda()
opt = torch.optim.SGD(list(emb.parameters()) + list(lin.parameters()), lr=0.1)


def m(tag):
    print(tag, torch.cuda.memory_allocated())


m("model")
for step in range(2):
    idx = torch.randint(0, 100000, (4096,), device="cuda")
    off = torch.arange(0, 4096, 4, device="cuda")
    m("batch")
    loss = lin(emb(idx, off)).square().mean()
    m("forward")
    loss.backward()
    g = emb.weight.grad
    print("grad", g.layout, g._nnz(), tuple(g._values().shape),
          g.is_coalesced())
    del g
    m("backward")
    opt.step()
    m("step")
    opt.zero_grad()
    m("zero_grad")
    del idx, off, loss
    m("end")
print("peak", torch.cuda.max_memory_allocated())
