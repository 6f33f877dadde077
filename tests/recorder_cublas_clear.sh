#!/bin/sh
# torch.compile(mode="reduce-overhead") warms up and captures inside
# cudagraph trees' clear_cublas_manager(), which calls
# torch._C._cuda_clearCublasWorkspaces() on entry and exit: every cuBLAS
# and cuBLASLt workspace of the process is freed, the eager stream's too
# (its (handle, stream) map is emptied), and the next eager GEMM makes a
# new one.  The recorder freed only the workspaces made inside the
# warm-up: gpt-fast's compiled generate.py kept the prefill's 32 MiB
# workspace live under the autotuner's L2 flush buffer, +29% allocated
# against the H200 (docs/corpus.md, "Programs outside the corpus").
# Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/ro.py" <<'PY'
import torch
x = torch.randn(64, 512, device="cuda")
y = x @ x.T                      # eager: the default stream's workspace
f = torch.compile(lambda a: torch.relu(a @ a.T), mode="reduce-overhead")
with torch.no_grad():
    for _ in range(3):           # warm-up, capture, replay
        z = f(x)
y = x @ x.T                      # eager again: a new workspace
PY
$MEMSIM record --fake -o "$tmp/ro.csv" -- "$PY" "$tmp/ro.py" \
	>/dev/null 2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# the default stream's (stream 0) cuBLAS workspaces: the first freed before
# the first warm-up's pool_begin, a second made after the graphs
awk -F, '$3 == "alloc" && $6 == 0 && $8 == "cuBLAS workspace" { print $1, $4 }' \
	"$tmp/ro.csv" >"$tmp/ws0"
n=$(wc -l <"$tmp/ws0")
[ "$n" -eq 2 ] || fail "$n cuBLAS workspaces on the default stream, not 2"
set -- $(head -1 "$tmp/ws0")
first=$(awk -F, -v a="${2:-x}" '$3 == "free_completed" && $4 == a { print $1; exit }' "$tmp/ro.csv")
pool=$(awk -F, '$3 == "pool_begin" { print $1; exit }' "$tmp/ro.csv")
[ -n "$first" ] && [ -n "$pool" ] && [ "$first" -lt "$pool" ] ||
	fail "the eager workspace not freed before the warm-up (freed at '${first:-never}', pool_begin at '${pool:-none}')"
# every workspace the graph stream made is freed (clear_cublas_manager's exit)
made=$(awk -F, '$3 == "alloc" && $6 != 0 && $8 ~ /^cuBLAS(Lt)? workspace$/ { print $4 }' "$tmp/ro.csv" | sort)
freed=$(awk -F, '$3 == "free_completed" && $6 != 0 { print $4 }' "$tmp/ro.csv" | sort)
[ -n "$made" ] || fail "no workspace on the graph stream"
for a in $made; do
	echo "$freed" | grep -qx "$a" || fail "graph stream workspace at $a never freed"
done
# CUDAGraphTreeManager's first act is an empty capture that keeps its pool
# alive (`with torch.cuda.graph(graph, pool=...): pass`), and
# torch.cuda.graph's __enter__ empties the cache: an empty_cache row right
# before the first pool_begin (transformers' static-cache generate() had
# the autotuner's free 60 MiB flush segment kept, +39% reserved against
# the H200, docs/recording.md).
awk -F, 'NR > 1 && $3 != "annotate" { if ($3 == "pool_begin") { print prev; exit } prev = $3 }' \
	"$tmp/ro.csv" >"$tmp/before"
[ "$(cat "$tmp/before")" = empty_cache ] ||
	fail "the row before the first pool_begin is '$(cat "$tmp/before")', not empty_cache"
# A program's own call (Lightning's teardown, _clear_cuda_memory, makes
# it before empty_cache at the end of each fit, validate and test): the
# main thread's cuBLAS workspace, then its cuBLASLt one (the cuBLAS map
# is cleared first), freed there; the next GEMMs make new ones.
cat >"$tmp/cl.py" <<'PY'
import copy
import torch
lin = torch.nn.Linear(64, 64, device="cuda")
x = torch.randn(8, 64, device="cuda")
lin(x).sum()
torch._C._cuda_clearCublasWorkspaces()
torch.cuda.empty_cache()
lin(x).sum()
# copy.deepcopy of a plain tensor (Tensor.__deepcopy__): the storage's
# copy, then the scalar new_empty([]) that set_ drops; of a parameter
# (Parameter.__deepcopy__) a clone alone
t = torch.ones(3, device="cuda")
u = copy.deepcopy({"t": t})
w = copy.deepcopy(lin.weight)
PY
$MEMSIM record --fake -o "$tmp/cl.csv" -- "$PY" "$tmp/cl.py" \
	>/dev/null 2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
awk -F, 'NR > 1 && $3 != "annotate" {
	if ($3 == "alloc") { s[$4] = $5; print "a", $5, $8 }
	else if ($3 == "free_completed") print "f", s[$4]
	else print $3 }' "$tmp/cl.csv" | sed -n 1,23p >"$tmp/cl.got"
cat >"$tmp/cl.want" <<'EOF2'
a 16384 Linear.weight
a 256 Linear.bias
a 2048 cl.py:4 <module>
a 2048 Linear
a 33554432 cuBLAS workspace
a 1048576 cuBLASLt workspace
a 4 cl.py:5 <module>
f 2048
f 4
f 33554432
f 1048576
empty_cache
a 2048 Linear
a 33554432 cuBLAS workspace
a 1048576 cuBLASLt workspace
a 4 cl.py:8 <module>
f 2048
f 4
a 12 cl.py:12 <module>
a 12 copy.py:153 deepcopy
a 4 copy.py:153 deepcopy
f 4
a 16384 copy.py:153 deepcopy
EOF2
diff "$tmp/cl.want" "$tmp/cl.got" >"$tmp/cl.diff" ||
	fail "clearCublasWorkspaces and deepcopy: $(cat "$tmp/cl.diff")"
finish recorder_cublas_clear.sh
