#!/bin/sh
# memsim record --fake: DistributedDataParallel's constructor syncs the
# module's parameters and buffers from rank 0 (_sync_module_states:
# dist._broadcast_coalesced, c10d's BroadcastWork: flatten_dense_tensors
# of a bucket, broadcast, each tensor copy_'d back from its slice).  On
# rank 0 that gives every tensor its own values back, but the bucket (a
# cat beyond the 65,536 elements whose values are followed) was unknown,
# and its copy_ back made the known values of every tensor in it stale:
# MoCo v3's main_lincls.py loads a checkpoint's weights, wraps the model
# in DDP, and after an epoch asserts the frozen weights equal the
# checkpoint's (sanity_check), which failed under --fake at the first
# weight (conv1.weight, 9,408 elements loaded from a host tensor).  The
# storages' write counts are now set back after the call (dist.py).
# A weight beyond that limit keeps the checkpoint's values too (a copy
# from the host, kept by reference: values.Values._upload).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/d.py" <<'PY'
import torch
import torch.distributed as dist
dist.init_process_group("nccl", world_size=1, rank=0,
                        init_method="tcp://127.0.0.1:29671")
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 64, 7, bias=False)
        self.fc = torch.nn.Linear(512, 512)
        self.register_buffer("steps", torch.arange(8.))
    def forward(self, x):
        return self.fc(self.conv(x).flatten(1)[:, :512])
m = M()
sd = {k: torch.randn(v.shape) for k, v in m.state_dict().items()
      if k != "steps"}
m.load_state_dict(sd, strict=False)
m.cuda(0)
d = torch.nn.parallel.DistributedDataParallel(m, device_ids=[0])
d(torch.randn(2, 3, 16, 16, device="cuda")).sum().backward()
for k, v in m.state_dict().items():
    want = torch.arange(8.) if k == "steps" else sd[k]
    print(k, bool((v.cpu() == want).all()))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/d.csv" -- "$PY" d.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "conv.weight True" "fc.bias True" "steps True" \
	"fc.weight True"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_ddp_broadcast.sh
