#!/bin/sh
# memsim record --fake: x[i] with int32 indices on the GPU.  index's meta
# function (make_info) converts each int32 index to int64 once every index
# is on x's device (indice.to(kLong)), the CUDA kernel reading int64
# offsets: a long copy before the output, freed when the op returns; a
# host int32 index is first copied to the GPU as int32, which the long
# copy replaces (freed at once); x[i] = values (index_put_) the same.  The
# recording had the output alone.  The backward's makeLinearIndex converts
# the saved int32 index too, before the linear index.
# Values stay right under --values cpu.  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.arange(4000.0, device="cuda").view(1000, 4)
i = torch.tensor([3, 1, 999] * 100, dtype=torch.int32, device="cuda")
y = x[i]
h = torch.tensor([7, 8] * 128, dtype=torch.int32)
z = x[h]
r = torch.arange(3, device="cuda").view(3, 1)
c = torch.tensor([0, 2], dtype=torch.int32, device="cuda")
w = x[r, c]
print("vals", y[:3, 0].tolist(), z[:2, 1].tolist(), w.tolist())
PY
for v in "" "--values cpu"; do
	# shellcheck disable=SC2086
	(cd "$tmp" && $MEMSIM record --fake $v -o "$tmp/a.csv" -- "$PY" a.py) \
		>"$tmp/out" 2>&1 || fail "record $v: $(tail -3 "$tmp/out")"
	# after x and i (1,200 bytes): i's long copy (2,400), y (300 x 4
	# floats: 4,800), the copy freed; then h's int32 device copy (1,024),
	# its long copy (2,048), the int32 copy freed, z (4,096), the long
	# copy freed; then r (24 bytes) and c (8) broadcast to 3 x 2: c's
	# long copy of that shape (48), w (24), the copy freed
	got=$(awk -F, 'NR > 2 { print $3, $5 }' "$tmp/a.csv" | head -15 | tr '\n' ';')
	want="alloc 1200;alloc 2400;alloc 4800;free_completed 2400;alloc 1024;alloc 2048;free_completed 1024;alloc 4096;free_completed 2048;alloc 24;alloc 8;alloc 48;alloc 24;free_completed 48;"
	[ "$got" = "$want" ] || fail "$v: got '$got', want '$want': $(cat "$tmp/a.csv")"
done
grep -qxF "vals [12.0, 4.0, 3996.0] [29.0, 33.0] [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]" "$tmp/out" ||
	fail "values: $(cat "$tmp/out")"
# x[i] = values (index_put_, make_info too): the int64 copy (2,400)
# after the values (4,800), freed when the op returns
cat >"$tmp/b.py" <<'PY'
import torch
x = torch.zeros(1000, 4, device="cuda")
i = torch.tensor([3, 1, 999] * 100, dtype=torch.int32, device="cuda")
x[i] = torch.ones(300, 4, device="cuda")
print("vals", x[3].tolist(), x[0].tolist())
PY
for v in "" "--values cpu"; do
	# shellcheck disable=SC2086
	(cd "$tmp" && $MEMSIM record --fake $v -o "$tmp/b.csv" -- "$PY" b.py) \
		>"$tmp/out" 2>&1 || fail "record $v: $(tail -3 "$tmp/out")"
	got=$(awk -F, 'NR > 3 { print $3, $5 }' "$tmp/b.csv" | head -4 | tr '\n' ';')
	want="alloc 4800;alloc 2400;free_completed 2400;free_completed 4800;"
	[ "$got" = "$want" ] || fail "index_put_ $v: got '$got', want '$want'"
done
grep -qxF "vals [1.0, 1.0, 1.0, 1.0] [0.0, 0.0, 0.0, 0.0]" "$tmp/out" ||
	fail "index_put_ values: $(cat "$tmp/out")"
# index's backward (index_put_ with accumulate: index_put_with_sort_kernel)
# with the saved int32 index: makeLinearIndex converts it to int64 (2,400)
# before the wrapped and linear indices, and frees it when it returns,
# once the linear index is made; then the sort's arrays.  The recording
# had no long copy there.
cat >"$tmp/c.py" <<'PY'
import torch
w = torch.zeros(1000, 4, device="cuda", requires_grad=True)
i = torch.tensor([3, 1, 999] * 100, dtype=torch.int32, device="cuda")
y = w[i]
y.backward(torch.ones(300, 4, device="cuda"))
print("vals", w.grad[3].tolist(), w.grad[0].tolist())
PY
for v in "" "--values cpu"; do
	# shellcheck disable=SC2086
	(cd "$tmp" && $MEMSIM record --fake $v -o "$tmp/c.csv" -- "$PY" c.py) \
		>"$tmp/out" 2>&1 || fail "backward $v: $(tail -3 "$tmp/out")"
	# after w (16,000), i (1,200), the forward's long copy and y, the
	# gradient (4,800) and w.grad's zeros (16,000): the long copy,
	# wrapped, linear; wrapped and the long copy freed; sorted, orig,
	# range and cub's byte; all freed, the linear index last
	got=$(awk -F, 'NR > 6 { print $3, $5 }' "$tmp/c.csv" | tr '\n' ';')
	want="alloc 4800;alloc 16000;alloc 2400;alloc 2400;alloc 2400;free_completed 2400;free_completed 2400;alloc 2400;alloc 2400;alloc 2400;alloc 1;free_completed 1;free_completed 2400;free_completed 2400;free_completed 2400;free_completed 2400;free_completed 4800;"
	[ "$got" = "$want" ] || fail "backward $v: got '$got', want '$want'"
done
grep -qxF "vals [100.0, 100.0, 100.0, 100.0] [0.0, 0.0, 0.0, 0.0]" "$tmp/out" ||
	fail "backward values: $(cat "$tmp/out")"
finish recorder_index_int32.sh
