#!/bin/sh
# pickle.dumps of a fake tensor (no torch.save) is reduced as torch.save
# reduces it under the recorder (host.patch_save: shape, dtype, strides,
# the values the recorder knows), as a real tensor pickles
# (Tensor.__reduce_ex__), and pickle.loads gives it back.  It pickled the
# fake mode along and failed ("Can't pickle local object"): a host tensor
# the recorder keeps fake (a big one, param_new's weights) reached
# Stable-Baselines3's save, which cloudpickles ARS's `weights`.
# Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/pk.py" <<'PY'
import pickle, torch
big = torch.randn(600, 600)          # 1.4 MB: stays fake under --fake
small = torch.arange(6.)
g = torch.ones(4, 3, device="cuda") * 2
b = pickle.dumps({"big": big, "small": small, "g": g})
d = pickle.loads(b)
assert d["big"].shape == (600, 600) and d["big"].dtype == torch.float32
assert d["small"].tolist() == [0., 1., 2., 3., 4., 5.]
assert d["g"].device.type == "cuda" and d["g"].sum().item() == 24
print("ok")
PY
for values in rules cpu; do
	$MEMSIM record --fake --values $values -o "$tmp/pk.csv" -- "$PY" \
		"$tmp/pk.py" >"$tmp/err" 2>&1 ||
		fail "record --values $values: $(grep -v '^memsim record: ' "$tmp/err" | tail -2)"
	grep -q '^ok$' "$tmp/err" || fail "--values $values: no ok: $(tail -3 "$tmp/err")"
done
finish recorder_pickle_fake.sh
