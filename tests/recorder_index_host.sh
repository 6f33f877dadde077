#!/bin/sh
# memsim record --fake: a GPU tensor indexed by host indices (swin's
# pos_embedding[relative_indices[..., 0], relative_indices[..., 1]],
# kentaroy47/vision-transformers-cifar10) copies each index to the GPU
# before the output is allocated, as index's meta function does
# (make_info -> expandTensors(self, indices, ensure_same_device=true):
# index.to(self.device()); a host mask as its nonzero(), one (k, dim)
# tensor); the copies are freed when the op returns, last first.  The
# fake kernels read the host indices where they are, and the recording
# had the output alone.  Values stay right under --values cpu.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
p = torch.arange(64.0, device="cuda").view(8, 8)
ri = torch.tensor([[1, 2], [3, 4], [5, 6], [7, 0]] * 32)   # 128 x 2
y = p[ri[:, 0], ri[:, 1]]
m = torch.tensor([True, False] * 4)
z = p[m]
print("vals", y[:4].tolist(), z[:, 0].tolist())
PY
for v in "" "--values cpu"; do
	# shellcheck disable=SC2086
	(cd "$tmp" && $MEMSIM record --fake $v -o "$tmp/a.csv" -- "$PY" a.py) \
		>"$tmp/out" 2>&1 || fail "record $v: $(tail -3 "$tmp/out")"
	# after p: two 1,024-byte index copies, the 512-byte output, the
	# copies freed (the second first); then the mask's (4, 1) nonzero
	# (32 bytes), z (4 x 8 floats), the nonzero freed
	got=$(awk -F, 'NR > 2 { print $3, $5 }' "$tmp/a.csv" | head -8 | tr '\n' ';')
	want="alloc 1024;alloc 1024;alloc 512;free_completed 1024;free_completed 1024;alloc 32;alloc 128;free_completed 32;"
	[ "$got" = "$want" ] || fail "$v: got '$got', want '$want': $(cat "$tmp/a.csv")"
	frees=$(awk -F, 'NR > 2 && $3 == "free_completed" { print $4 }' "$tmp/a.csv" | head -2 | tr '\n' ' ')
	allocs=$(awk -F, 'NR > 2 && $3 == "alloc" { print $4 }' "$tmp/a.csv" | head -2 | tac | tr '\n' ' ')
	[ "$frees" = "$allocs" ] || fail "$v: copies freed as '$frees', not last first ('$allocs')"
done
grep -qxF "vals [10.0, 28.0, 46.0, 56.0] [0.0, 16.0, 32.0, 48.0]" "$tmp/out" ||
	fail "values: $(cat "$tmp/out")"
finish recorder_index_host.sh
