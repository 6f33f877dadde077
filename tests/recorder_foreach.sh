#!/bin/sh
# The foreach reductions' own temporaries under memsim record --fake
# (kernels.foreach_reduce): foreach_tensor_norm_cuda's output_per_tensor,
# ntensors * max_chunks_per_tensor partial results (kChunkSize 65536
# elements a chunk) made before the norms and freed after them, by hand
# and through clip_grad_norm_, which takes _foreach_norm for each (device,
# dtype) group of gradients on the GPU (_has_foreach_support) as it does
# for plain tensors.  Needs Python 3; skips (77) without it, the recording
# part without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
PY=${MEMSIM_PYTHON:-python3}
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }

# By hand: 67 fp32 tensors of at most 16 chunks (lightning-transformer's
# gradients, its H200 snapshot's 4288-byte block); one more element makes
# 17 chunks; bf16 tensors accumulate in fp32 and their norms are bf16; an
# empty tensor's result is made after the others and vec_res's unused
# entry goes before output_per_tensor; _foreach_max keeps the tensors'
# dtype; a PyTorch with _foreach_global_norm adds global_output (320
# values) and global_norm.
PYTHONPATH="$SRC/traces" python3 - >"$tmp/hand" 2>&1 <<'PY' ||
from memsim_record import kernels as k
print(k.foreach_reduce("norm", [16 * 65536] + [100] * 66, 4, 4)[0])
print(k.foreach_reduce("norm", [16 * 65536 + 1, 5], 4, 4)[0])
print(k.foreach_reduce("norm", [70000, 3], 4, 2)[0])
print(k.foreach_reduce("norm", [10, 0, 10], 4, 4))
print(k.foreach_reduce("max", [200000], 2, 2)[0])
print(k.foreach_reduce("norm", [10], 4, 4, True))
print(k.foreach_reduce("norm", [], 4, 4))
PY
	fail "hand: $(cat "$tmp/hand")"
cat >"$tmp/want" <<'EOF'
[('alloc', 'output_per_tensor', 4288)]
[('alloc', 'output_per_tensor', 136)]
[('alloc', 'output_per_tensor', 16)]
([('alloc', 'output_per_tensor', 12)], [('alloc', 'vec_res 0', 4)], [('free', 'vec_res 0'), ('free', 'output_per_tensor')])
[('alloc', 'output_per_tensor', 8)]
([('alloc', 'output_per_tensor', 4), ('alloc', 'global_output', 1280)], [('alloc', 'global_norm', 4)], [('free', 'global_output'), ('free', 'output_per_tensor'), ('free', 'global_norm')])
([], [], [])
EOF
cmp -s "$tmp/want" "$tmp/hand" || fail "hand-made cases: $(diff "$tmp/want" "$tmp/hand")"

"$PY" -c 'import torch' 2>/dev/null || {
	finish "recorder_foreach.sh (no PyTorch: the recording skipped)"; exit 0; }
# clip_grad_norm_ over an fp32 model's 4 gradients (the largest 1100 x
# 1000, 17 chunks: 4 * 17 * 4 = 272 bytes) and a bf16 layer's 2 (one
# chunk: 2 * 4 = 8 bytes, bf16 norms of 2 bytes), a group each; the norm
# of order 3 takes the slow path (a linalg_vector_norm a gradient, no
# temporaries); torch._foreach_max on the fp32 gradients (their dtype:
# 4 * 17 * 4 again).
cat >"$tmp/clip.py" <<'PY'
import torch
m = torch.nn.Sequential(torch.nn.Linear(1000, 1100),
                        torch.nn.Linear(1100, 10)).cuda()
h = torch.nn.Linear(10, 3).cuda().bfloat16()
h(m(torch.randn(4, 1000, device="cuda")).bfloat16()).float().sum().backward()
ps = list(m.parameters()) + list(h.parameters())
torch.nn.utils.clip_grad_norm_(ps, 1.0)
torch.nn.utils.clip_grad_norm_(ps, 1.0, norm_type=3)
mx = torch._foreach_max([p.grad for p in m.parameters()])
PY
$MEMSIM record -o "$tmp/clip.csv" -- "$PY" "$tmp/clip.py" 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
# (the groups in the order _group_tensors_by_device_and_dtype gives them:
# sorted here)
got=$(awk -F, '$7 == "temporary" && $8 ~ /^foreach/ { print $5 ":" $8 }' \
	"$tmp/clip.csv" | sort | tr '\n' ' ')
want="272:foreach_tensor_max_cuda temporaries 272:foreach_tensor_norm_cuda temporaries 8:foreach_tensor_norm_cuda temporaries "
[ "$got" = "$want" ] || fail "foreach temporaries: $got"
# Each: the block, the group's results (4 norms or maxima of 4 bytes, 2 of
# 2 bytes), the block's free.
got=$(awk -F, '$7 == "temporary" && $8 ~ /^foreach/ { a = $4; n = 0; s = ""; next }
	a != "" { if ($3 == "alloc") { s = s $5 " "; next }
		if ($3 == "free_completed" && $4 == a) print s; else print "other " $0; a = "" }' \
	"$tmp/clip.csv" | sort | tr '\n' '|')
[ "$got" = "2 2 |4 4 4 4 |4 4 4 4 |" ] || fail "results between: $got"
finish recorder_foreach.sh
