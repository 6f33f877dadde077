#!/bin/sh
# memsim record --fake, UntypedStorage.from_buffer in the script's host
# code: PyTorch makes a meta storage while a FakeTensorMode is active
# (THPStorage_fromBuffer, for tracing), and the recorder's mode is active
# around host code, so torch.distributed's _object_to_tensor
# (all_gather_object, broadcast_object_list; torch.distributed.checkpoint's
# save runs them in a world of one: torchtitan's checkpoint) stopped at
# torch.ByteTensor(storage): "Attempted to set the storage of a tensor on
# device "cpu" to a storage on different device "meta"".  Now the storage
# is the host's.  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/fb.py" <<'PY'
import torch
import torch.distributed as dist
s = torch.ByteStorage._from_buffer(b"abcdef")
t = torch.ByteTensor(s)
assert t.device.type == "cpu" and t.tolist() == list(b"abcdef"), t
u = torch.UntypedStorage.from_buffer(b"abcdefgh", dtype=torch.uint8)
assert u.device.type == "cpu", u.device
torch.cuda.set_device(0)
x = torch.zeros(256, device="cuda")
dist.init_process_group("nccl", rank=0, world_size=1,
                        init_method="tcp://127.0.0.1:%d" % __import__("random").randint(20000, 60000))
out = [None]
dist.all_gather_object(out, {"step": 3})
assert out == [{"step": 3}], out
print("gathered", out)
dist.destroy_process_group()
PY
(cd "$tmp" && $MEMSIM record --fake -o fb.csv -- "$PY" fb.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "gathered \[{'step': 3}\]" "$tmp/out" || fail "no result: $(cat "$tmp/out")"
finish recorder_from_buffer
