#!/bin/sh
# memsim record --fake: x[idx] with x on the host and idx on the GPU
# stops the recorded program as it stops a real run (index's meta
# function, check_indices_on_cpu_or_selfdevice: indices on the host or
# on x's device only; Dispatch._index_devices).  The fake kernels lift
# the host tensor and indexed it without a word, so a program that
# fails on every GPU (Time-Series-Library's ETSformer indexes a
# host table of frequencies with topk's GPU indices) was recorded as
# if it ran.  What PyTorch allows is unchanged: a GPU tensor indexed by
# host indices, x[idx] = v on the host with GPU indices (index_put_'s
# make_info moves them), a 0-dim GPU index (a select by its item).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
host = torch.arange(40.0).reshape(4, 10)
gi = torch.randint(0, 10, (4, 3), device="cuda")
rows = torch.arange(4, device="cuda").unsqueeze(1)
dev = torch.zeros(4, 10, device="cuda")
print("gpu by host", tuple(dev[torch.tensor([0, 2])].shape))
print("gpu by gpu", tuple(dev[rows, gi].shape))
z = torch.zeros(10)
z[gi[0]] = 1.0
print("host put ok")
print("0-dim", float(host[0][torch.tensor(3, device="cuda")]))
for what, f in (("two", lambda: host[rows, gi]), ("one", lambda: host[gi])):
    try:
        f()
        print(what, "no error")
    except RuntimeError as e:
        print(what, "RuntimeError:", e)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
for l in "gpu by host (2, 10)" "gpu by gpu (4, 3)" "host put ok" \
	"two RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)" \
	"one RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)"; do
	grep -qxF "$l" "$tmp/out" || fail "no '$l' in: $(cat "$tmp/out")"
done
grep -q "^0-dim " "$tmp/out" || fail "0-dim index: $(cat "$tmp/out")"
finish recorder_index_devices.sh
