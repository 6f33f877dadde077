#!/bin/sh
# memsim record --fake on what third-party programs do (issue 25's corpus,
# tests/corpus): torch.equal / torch.allclose of GPU tensors
# (values.host_bool), torch.load of a real checkpoint onto the GPU
# (host._Load), a model moved after its optimizer was made, deep-copied
# layers, the attention kernel of an fp32 head dimension of 100.  Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
R="$SRC/recorder"
# rows CSV: "size,category,site" of every alloc and annotate row, one line
rows() { grep ',alloc,\|,annotate,' "$1" | cut -d, -f5,7,8 | sed 's/ <module>$//' | tr '\n' ' '; }

# 1. torch.equal as cuda_equal computes it: eq(a, b).all().item(), the
# bool mask (2048 bytes) and the 1-byte all() recorded.  A tensor against
# itself or a view of the same elements (tied weights) is equal (an
# assumption: no NaN); zeros against zeros are known exactly; two random
# tensors of unknown values take the .item() rule of a bool (False);
# different sizes are False without a kernel.
$MEMSIM record -o "$tmp/e.csv" -- "$PY" "$R/host_bool.py" 2>"$tmp/err" ||
	fail "record host_bool: $(tail -3 "$tmp/err")"
grep -q "^same True True$" "$tmp/err" || fail "equal same: $(cat "$tmp/err")"
grep -q "^known True True$" "$tmp/err" || fail "equal known: $(cat "$tmp/err")"
grep -q "^other False False$" "$tmp/err" || fail "equal other: $(cat "$tmp/err")"
grep -q "; 3 assumptions (equal:same 2, item:bool 1)$" "$tmp/err" ||
	fail "equal summary: $(cat "$tmp/err")"
grep ',annotate,' "$tmp/e.csv" | cut -d, -f8 >"$tmp/out"
cat >"$tmp/want" <<'EOT'
equal:same host_bool.py:8 =True
equal:same host_bool.py:8 =True
item:bool host_bool.py:11 =False
EOT
cmp -s "$tmp/out" "$tmp/want" || fail "equal assumptions: $(diff "$tmp/want" "$tmp/out")"
# count CSV "SIZE,CATEGORY,SITE": how many alloc rows are that
count() { rows "$1" | tr ' ' '\n' | grep -c "^$2\$"; }
[ "$(count "$tmp/e.csv" 2048,other,host_bool.py:8)" = 2 ] ||
	fail "equal mask: $(rows "$tmp/e.csv")"
[ "$(count "$tmp/e.csv" 1,other,host_bool.py:8)" = 2 ] ||
	fail "equal all: $(rows "$tmp/e.csv")"
[ "$(count "$tmp/e.csv" 2048,other,host_bool.py:11)" = 1 ] &&
	[ "$(count "$tmp/e.csv" 1,other,host_bool.py:11)" = 1 ] ||
	fail "equal other: $(rows "$tmp/e.csv")"
# --values cpu computes every answer: no assumption.
$MEMSIM record --values cpu -o "$tmp/ec.csv" -- "$PY" "$R/host_bool.py" 2>"$tmp/err" ||
	fail "record host_bool cpu: $(tail -3 "$tmp/err")"
grep -q "^same True True$" "$tmp/err" && grep -q "^other False False$" "$tmp/err" ||
	fail "equal cpu: $(cat "$tmp/err")"
grep -q "; 0 assumptions$" "$tmp/err" || fail "equal cpu summary: $(cat "$tmp/err")"

# 2. torch.load of a checkpoint the script saved for real, onto the GPU by
# every kind of map_location: one CUDA storage a saved storage, of its
# nbytes, in the pickle's order (1000 x 3 fp32, 777 fp16, the 300 floats
# two views share, a 0-dim fp32, 5 int64), with the file's values
# (view[5] = 105.0); load_state_dict then copies into the parameter.
want="12000,input,load_gpu.py:14 1554,input,load_gpu.py:14 \
1200,input,load_gpu.py:14 4,input,load_gpu.py:14 \
40,input,load_gpu.py:14 8,other,load_gpu.py:17 \
12000,parameter,Linear.weight "
for how in str dev dict fn to; do
	$MEMSIM record -o "$tmp/l.csv" -- "$PY" "$R/load_gpu.py" $how 2>"$tmp/err" ||
		fail "record load $how: $(tail -3 "$tmp/err")"
	grep -q "^devices cuda cuda cuda cuda cuda cuda$" "$tmp/err" ||
		fail "load $how devices: $(cat "$tmp/err")"
	grep -q "^values 105.0 3.0 10 3.0$" "$tmp/err" || fail "load $how values: $(cat "$tmp/err")"
	[ "$(rows "$tmp/l.csv")" = "$want" ] || fail "load $how: $(rows "$tmp/l.csv")"
done
# map_location="cpu": the file's own CPU tensors, nothing on the GPU.
$MEMSIM record -o "$tmp/l.csv" -- "$PY" "$R/load_gpu.py" cpu 2>"$tmp/err" ||
	fail "record load cpu: $(tail -3 "$tmp/err")"
grep -q "^devices cpu cpu cpu cpu cpu cpu$" "$tmp/err" &&
	grep -q "^values 105.0 3.0 10 3.0$" "$tmp/err" || fail "load cpu: $(cat "$tmp/err")"
[ "$(rows "$tmp/l.csv")" = "12000,parameter,Linear.weight " ] ||
	fail "load cpu: $(rows "$tmp/l.csv")"
# 3. A model moved after its optimizer was made (Fabric's setup): the
# optimizer's parameters are the moved ones (Module._apply swaps their
# .data), so they get gradients; m.half() then frees each fp32 parameter
# as its fp16 copy is made (4096 + 64 + 64 + 64 floats); the fp16 ones
# stay live at the script's end (docs/recording-boundary.md).
$MEMSIM record -o "$tmp/m.csv" -- "$PY" "$R/move_after_optim.py" 2>"$tmp/err" ||
	fail "record move: $(tail -3 "$tmp/err")"
grep -q "^grads 4$" "$tmp/err" || fail "move grads: $(cat "$tmp/err")"
grep -q "^ln 1.0 cuda:0$" "$tmp/err" || fail "move ln: $(cat "$tmp/err")"
grep -q "^dtypes torch.float16 torch.float16 torch.float16 torch.float16$" "$tmp/err" ||
	fail "move dtypes: $(cat "$tmp/err")"
got=$(grep ',alloc,\|,free_completed,' "$tmp/m.csv" | cut -d, -f3,5 |
	sed -n '/^alloc,8192$/,$p' | tr '\n' ' ')
[ "$got" = "alloc,8192 free_completed,16384 alloc,128 free_completed,256 \
alloc,128 free_completed,256 alloc,128 free_completed,256 " ] ||
	fail "move half: $got"

# 4. A deep-copied layer (nn.TransformerEncoder's _get_clones): its weight
# is one storage with its views, so the forward allocates the output only
# (it gave weight.t() a weight-sized storage of its own); a deepcopy of a
# CUDA model copies a tied layer once.  fp32 attention with head dimension
# 100 runs memory-efficient attention on the H200 (minimum_gemm_alignment
# 4): the output and the 64-row logsumexp, no 35 x 35 weights.
$MEMSIM record -o "$tmp/c.csv" -- "$PY" "$R/clones_attention.py" 2>"$tmp/err" ||
	fail "record clones: $(tail -3 "$tmp/err")"
got=$(grep ',alloc,' "$tmp/c.csv" | cut -d, -f5,8 | sed 's/ <module>$//; s/copy.py:[0-9]* //' | tr '\n' ' ')
[ "$got" = "160000,Linear.weight 800,Linear.bias 560000,clones_attention.py:8 \
560000,Linear 33554432,cuBLAS workspace 1048576,cuBLASLt workspace \
160000,deepcopy 800,deepcopy \
560000,clones_attention.py:11 560000,clones_attention.py:12 \
10240,clones_attention.py:12 " ] || fail "clones: $got"

finish recorder_programs.sh
