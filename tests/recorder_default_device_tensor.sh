#!/bin/sh
# memsim record --fake, torch.tensor and torch.as_tensor under
# torch.set_default_device("cuda") (and `with torch.device("cuda")`):
# the DeviceContext gives them the default device when none is named, as
# every constructor of _device_constructors().  That set holds what
# torch.tensor was when first asked for, the recorder's wrapper of it
# (fake.py's _patch_tensor_data), and not the original the wrapper calls:
# they made host tensors (llama-models' Llama3.build sets the default
# device, then generate's torch.tensor(stop_tokens) met the tokens on the
# GPU in torch.isin: "test_elements is on cpu").  A named device, and no
# default, are kept.  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/dd.py" <<'PY'
import torch
c = torch.tensor([1, 2, 3])
assert c.device.type == "cpu", c.device
torch.set_default_device("cuda")
a = torch.tensor([1, 2, 3])
b = torch.as_tensor([1.0, 2.0])
h = torch.tensor([1, 2], device="cpu")
z = torch.zeros(3)
print("devices", a.device, b.device, h.device, z.device)
assert torch.isin(torch.zeros(4, dtype=torch.long), a).shape == (4,)
torch.set_default_device(None)
with torch.device("cuda"):
    w = torch.tensor([5.0])
print("with", w.device, torch.tensor([1]).device)
PY
(cd "$tmp" && $MEMSIM record --fake -o dd.csv -- "$PY" dd.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "devices cuda:0 cuda:0 cpu cuda:0" "$tmp/out" || fail "set_default_device: $(cat "$tmp/out")"
grep -q "with cuda:0 cpu" "$tmp/out" || fail "with torch.device: $(cat "$tmp/out")"
finish recorder_default_device_tensor
