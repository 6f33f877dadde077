#!/bin/sh
# A compiled module under DistributedDataParallel (modded-nanogpt's
# records: DDP(torch.compile(model)) in a world of one): Dynamo compiles
# a frame with the dispatch modes set aside (CatchErrorsWrapper.__call__,
# `with compile_lock, _disable_current_modes()`), but its DDP path
# (optimize_ddp "ddp_optimizer": the frame traced by a clone of the
# callback whose backend is DDPOptimizer.compile_fn) runs under
# compile_lock alone.  The recorder's modes stayed on there: every fake
# value Dynamo's tracing computed (get_fake_value) and DDPOptimizer's
# propagation through its split submodules (deepcopy_to_fake_tensor of
# each) were recorded as allocations, live as long as the graph's
# metadata holds them: modded-nanogpt's 2024-10-10 Muon record peaked at
# 72 GB.  Now the DDP path compiles with the modes set aside as the other
# one does: after the loop the same bytes live as with optimize_ddp off,
# and a training step, which stopped in DDPOptimizer's propagation
# ("fw_metadata must not be None"; ModernArch's rotary embedding: "Please
# convert all Tensors to FakeTensors first"), records.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/t.py" <<'PY'
import sys, torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch._dynamo
from torch.nn.parallel import DistributedDataParallel as DDP
torch._dynamo.config.optimize_ddp = sys.argv[1] == "on"
dist.init_process_group("nccl", rank=0, world_size=1)
class M(nn.Module):
    def __init__(s):
        super().__init__()
        s.emb = nn.Embedding(8192, 256)
        s.l = nn.Linear(256, 256)
        s.head = nn.Linear(256, 8192, bias=False)
    def forward(s, x, y):
        logits = s.head(F.relu(s.l(s.emb(x)))).float()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
m = DDP(torch.compile(M().cuda()), device_ids=[0])
x = torch.randint(0, 8192, (8, 256), device="cuda")
y = torch.randint(0, 8192, (8, 256), device="cuda")
for i in range(3):
    with torch.no_grad():
        m(x, y)
print("after", torch.cuda.memory_allocated())
PY
for o in on off; do
	(cd "$tmp" && MASTER_ADDR=127.0.0.1 MASTER_PORT=29561 $MEMSIM record --fake \
		-o "$tmp/$o.csv" -- "$PY" t.py $o) >"$tmp/$o.err" 2>&1 ||
		fail "optimize_ddp $o: $(tail -3 "$tmp/$o.err")"
	sed -n 's/^after //p' "$tmp/$o.err" >"$tmp/$o.after"
done
[ -s "$tmp/off.after" ] || fail "no result: $(cat "$tmp/off.err")"
cmp -s "$tmp/on.after" "$tmp/off.after" ||
	fail "live after the loop: ddp_optimizer $(cat "$tmp/on.after"), off $(cat "$tmp/off.after")"
cat >"$tmp/u.py" <<'PY'
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl", rank=0, world_size=1)
m = DDP(torch.compile(nn.Sequential(nn.Linear(512, 2048), nn.ReLU(),
                                    nn.Linear(2048, 512)).cuda()), device_ids=[0])
opt = torch.optim.AdamW(m.parameters())
for i in range(2):
    m(torch.randn(64, 512, device="cuda")).square().mean().backward()
    opt.step()
    opt.zero_grad()
print("trained")
PY
(cd "$tmp" && MASTER_ADDR=127.0.0.1 MASTER_PORT=29562 $MEMSIM record --fake \
	-o "$tmp/u.csv" -- "$PY" u.py) >"$tmp/u.err" 2>&1 ||
	fail "training step: $(tail -3 "$tmp/u.err")"
grep -qxF trained "$tmp/u.err" || fail "no result: $(cat "$tmp/u.err")"
grep -q "runs eagerly" "$tmp/u.err" && fail "a graph ran eagerly: $(cat "$tmp/u.err")"
finish compile_ddp
