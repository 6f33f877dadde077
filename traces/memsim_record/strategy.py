"""--amp and --checkpoint applied to an unmodified script.

--amp bf16|fp16: torch.autocast("cuda", dtype) around every outermost
module call (the model's forward; the loss outside it stays as written).
--checkpoint every:K: torch.utils.checkpoint.checkpoint(use_reentrant=False)
around blocks 0, K, 2K, ... of the longest nn.ModuleList / nn.Sequential of
modules of one type (the repeated blocks); sqrt: K = ceil(sqrt(n)) blocks
are kept and every other block is checkpointed.  A strategy already in the
script is recorded as it is.
"""
import math


def parse_checkpoint(s):
    if s in (None, "", "none"):
        return None
    if s == "sqrt":
        return ("sqrt", 0)
    if s.startswith("every:"):
        k = int(s[6:])
        if k < 1:
            raise ValueError("every:K needs K >= 1")
        return ("every", k)
    raise ValueError("expected none, every:K or sqrt")


def _blocks(root):
    import torch.nn as nn
    best = None
    for m in root.modules():
        if isinstance(m, (nn.ModuleList, nn.Sequential)) and len(m) >= 2:
            kinds = {type(c) for c in m}
            if len(kinds) == 1 and (best is None or len(m) > len(best)):
                best = m
    return best


def apply(torch, opt):
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(opt.amp)
    ck = parse_checkpoint(opt.checkpoint)
    if amp is None and ck is None:
        return
    import torch.nn as nn
    from torch.utils.checkpoint import checkpoint
    orig_call = nn.Module.__call__
    state = {"depth": 0, "done": set()}

    def wrap_blocks(root):
        blocks = _blocks(root)
        if blocks is None:
            return
        n = len(blocks)
        for i, b in enumerate(blocks):
            if ck[0] == "every":
                on = i % ck[1] == 0
            else:
                on = i % max(1, math.ceil(math.sqrt(n))) != 0
            if on and not getattr(b, "_memsim_ckpt", False):
                fwd = b.forward

                def f(*a, _fwd=fwd, **k):
                    if not torch.is_grad_enabled():
                        return _fwd(*a, **k)
                    return checkpoint(_fwd, *a, use_reentrant=False, **k)
                b.forward = f
                b._memsim_ckpt = True

    def call(self, *a, **k):
        if state["depth"] > 0:
            return orig_call(self, *a, **k)
        if ck is not None and id(self) not in state["done"]:
            state["done"].add(id(self))
            wrap_blocks(self)
        state["depth"] += 1
        try:
            if amp is not None:
                with torch.autocast("cuda", dtype=amp):
                    return orig_call(self, *a, **k)
            return orig_call(self, *a, **k)
        finally:
            state["depth"] -= 1

    nn.Module.__call__ = call
