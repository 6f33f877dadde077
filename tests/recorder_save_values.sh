#!/bin/sh
# torch.save of a fake tensor writes the values the recorder knows of it
# (its shadow: every tensor under --values cpu, a small one of known
# values under the rules), and torch.load of that file during the same
# recording gives them back, as torch.save writes a storage's bytes
# (torch.serialization's _save: the storage copied to the host).  They
# were saved as shapes alone and loaded as zeros: pytorch-tabnet's
# notebooks save a model, load it and assert that its predictions are the
# same, which stopped the recording under --values cpu.
# Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/save.py" <<'PY'
import torch
m = torch.nn.Linear(64, 32).cuda()
x = torch.randn(4, 64, device="cuda")
y = m(x).tolist()
torch.save(m.state_dict(), "m.pt")
torch.save({"w": m.weight, "step": torch.tensor(7, device="cuda")}, "d.pt")
m2 = torch.nn.Linear(64, 32).cuda()
m2.load_state_dict(torch.load("m.pt", map_location="cuda"))
assert m2(x).tolist() == y, "the loaded model's outputs"
m3 = torch.nn.Linear(64, 32)
m3.load_state_dict(torch.load("m.pt", map_location="cpu"))
assert m3(x.cpu()).tolist() == m(x).cpu().tolist(), "loaded on the host"
d = torch.load("d.pt")
assert d["step"].item() == 7, "a small tensor"
assert torch.equal(d["w"].cpu(), m.weight.cpu()), "the weight"
print("ok")
PY
for values in cpu; do
	$MEMSIM record --fake --values $values -o "$tmp/save.csv" -- "$PY" \
		"$tmp/save.py" >"$tmp/err" 2>&1 ||
		fail "record --values $values: $(grep -v '^memsim record: ' "$tmp/err" | tail -2)"
	grep -q '^ok$' "$tmp/err" || fail "--values $values: no ok: $(tail -3 "$tmp/err")"
done
# under the rules, the small tensor's value
cat >"$tmp/small.py" <<'PY'
import torch
torch.save({"step": torch.tensor(7, device="cuda"),
            "w": torch.ones(3, 5, device="cuda") * 2}, "d.pt")
d = torch.load("d.pt")
assert d["step"].item() == 7, "a small tensor"
assert d["w"].sum().item() == 30, "known values"
print("ok")
PY
$MEMSIM record --fake -o "$tmp/small.csv" -- "$PY" "$tmp/small.py" \
	>"$tmp/err" 2>&1 ||
	fail "record (rules): $(grep -v '^memsim record: ' "$tmp/err" | tail -2)"
grep -q '^ok$' "$tmp/err" || fail "rules: no ok: $(tail -3 "$tmp/err")"
finish recorder_save_values.sh
