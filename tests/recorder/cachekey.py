"""The fake mode's cache keys of memsim_record/cachekey.py
(tests/recorder_cachekey.sh).

python3 cachekey.py keys: the keys tell apart every two fake tensors that
PyTorch's keys tell apart (dtype, shape, strides, storage offset, storage
size, requires_grad, inference, conj), and give one key to two tensors of
the same metadata, so that the cache hits; ints, floats and bools of one
value stay apart.

python3 cachekey.py (under memsim record --fake): a small MoE trained a step
after an evaluation loop under no_grad (views, in-place ops, routing with
nonzero, index_add_, backward, AdamW), recorded with these keys and with
PyTorch's: the traces must be the same.
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def keys():
    from torch._subclasses.fake_tensor import FakeTensorMode, \
        _CacheKeyState
    from memsim_record import cachekey

    class Mode(FakeTensorMode):
        pass
    if cachekey.make(torch, FakeTensorMode) is None or \
            cachekey.output_from_entry(torch, FakeTensorMode) is None:
        sys.exit("cachekey.py: this PyTorch's FakeTensorMode is not the "
                 "one it knows")
    cachekey.install(torch, Mode, FakeTensorMode)
    fails = []
    with Mode(allow_non_fake_inputs=True) as m:
        def key(func, *args, **kwargs):
            return m._cache_key(_CacheKeyState(None), func, args, kwargs)
        add = torch.ops.aten.add.Tensor
        base = torch.empty(64, 8)
        a = torch.empty(8, 8)
        # pairs of tensors that differ in one property only
        differ = {
            "dtype": (a, torch.empty(8, 8, dtype=torch.int32)),
            "shape": (a, torch.empty(4, 16)),
            "strides": (a, torch.empty(8, 8).t()),
            "storage offset": (base[:8], base[8:16]),
            "storage size": (a, base[:8]),
            "requires_grad": (a, torch.empty(8, 8, requires_grad=True)),
            "device": (a, torch.empty(8, 8, device="meta")),
            "conj": (torch.empty(8, 8, dtype=torch.cfloat),
                     torch.empty(8, 8, dtype=torch.cfloat).conj()),
        }
        with torch.inference_mode():
            differ["inference"] = (a, torch.empty(8, 8))
        if key(add, a, a) != key(add, *[torch.empty(8, 8)] * 2):
            fails.append("two tensors of the same metadata: two keys")
        for what, (t1, t2) in differ.items():
            if key(add, t1, t1) == key(add, t2, t2):
                fails.append("%s: the same key" % what)
        mul = torch.ops.aten.mul.Scalar
        ks = [key(mul, a, v) for v in (1, 1.0, True)]
        if len(set(ks)) != 3:
            fails.append("1, 1.0 and True: not three keys")
        if key(torch.ops.aten.sum.dim_IntList, a, [0]) == \
                key(torch.ops.aten.sum.dim_IntList, a, [1]):
            fails.append("sum over [0] and [1]: the same key")
        hits = FakeTensorMode.cache_hits
        for _ in range(3):
            v = base[8:16].view(4, 16)
            out = v.t() * 2
        if FakeTensorMode.cache_hits - hits < 6:
            fails.append("too few cache hits: %d" % (
                FakeTensorMode.cache_hits - hits))
        if out.shape != (16, 4) or out.stride() != (1, 16) or \
                out.device.type != "cpu":
            fails.append("a cached output: %s %s on %s" % (
                tuple(out.shape), out.stride(), out.device))
        # a cached view: the input's storage, at its offset
        if v.untyped_storage()._cdata != base.untyped_storage()._cdata or \
                v.storage_offset() != 64 or v.stride() != (16, 1):
            fails.append("a cached view: not base's storage at 64")
    for f in fails:
        print("cachekey.py: " + f, file=sys.stderr)
    sys.exit(1 if fails else 0)


class Expert(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(),
                                 nn.Linear(4 * d, d))

    def forward(self, x):
        return self.net(x)


class MoE(nn.Module):
    def __init__(self, d=32, n=4, k=2):
        super().__init__()
        self.route = nn.Linear(d, n)
        self.experts = nn.ModuleList(Expert(d) for _ in range(n))
        self.k = k
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 11)

    def forward(self, x):
        x = self.ln(x)
        gate, idx = self.route(x).topk(self.k, dim=-1)
        gate = F.softmax(gate, dim=-1)
        flat = x.view(-1, x.size(-1))
        out = torch.zeros_like(flat)
        for i, e in enumerate(self.experts):
            sel = torch.nonzero((idx == i).any(dim=-1).view(-1)).squeeze(-1)
            if sel.numel() > 0:
                w = gate.view(-1, self.k)[sel].sum(-1, keepdim=True)
                out.index_add_(0, sel, e(flat[sel]) * w)
        y = out.view_as(x) + x
        att = (y @ y.transpose(-2, -1)) * y.size(-1) ** -0.5
        att = att.masked_fill(torch.ones_like(att).tril() == 0, -1e9)
        return self.head(F.softmax(att, dim=-1) @ y)


def main():
    torch.manual_seed(0)
    m = MoE().cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    x = torch.randn(4, 16, 32, device="cuda")
    y = torch.randint(0, 11, (4, 16), device="cuda")
    m.eval()
    with torch.no_grad():
        for _ in range(3):
            m(x)
    m.train()
    for _ in range(2):
        loss = F.cross_entropy(m(x).view(-1, 11), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    if sys.argv[1:] == ["keys"]:
        keys()
    else:
        main()
