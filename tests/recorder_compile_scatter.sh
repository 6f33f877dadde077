#!/bin/sh
# torch.compile under memsim record --fake: which kernels of a scatter
# Triton's autotuner benchmarks (an L2-flush block each, once a process;
# compiled.py, Program._configs and _scattered; docs/recording-compile.md).
# Inductor lowers index_put and scatter_add into a clone of the target
# (a pointwise kernel of the target's elements, the fill's when it is a
# constant; none for index_put_, made in place by the reinplacing pass)
# and a scatter kernel, a pointwise kernel over the scattered elements
# (index_put_impl_ and scatter_reduce_'s ir.Scatter ranges: the index's
# elements, times the target's dimensions it leaves), whose benchmark
# copies the buffer it mutates before the flush block and inside it
# (maybe_clone_args; on the GPU here, an inference graph's copies fitting
# under the peak the copy's flush made: copy_args_to_cpu_if_needed).  pointwise() leaves a kernel of at most 128
# elements one configuration (both of its blocks shrink to the size
# hint), so it is not benchmarked.  Cases: a 1 x 2 int32 buffer made in
# the function with one element written through a select (flex_
# attention's block mask in a graph with a score_mod builds one such:
# 2, and its select_scatter, pointwise over 2: no flush); the same
# written whole (index_put_: its fill, 2 elements, and the scatter of 1:
# none); x.index_put((idx,), v) on an input x of N elements with M indices (the
# copy of N, the scatter of M); zeros(N).scatter_add(0, idx, src) with
# M indices (the fill of N, the scatter of M).  Before, every scatter
# was tuned (two configurations whatever its size), and its target's
# copy not: 2 1 1 1 1 2 2 flushes (the select's index_put and its
# select_scatter, not pointwise then; the copy's flush in place of the
# scatter's).  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/scatter.py" <<'PY'
import sys
import torch
case = sys.argv[1]
dev = "cuda"
if case in ("select", "whole"):
    def f(v, idx):
        buf = torch.zeros(1, 2, device=dev, dtype=torch.int32)
        if case == "select":
            buf[0, idx] = v
        else:
            buf[idx, idx] = v
        return buf
    args = (torch.ones(1, device=dev, dtype=torch.int32),
            torch.zeros(1, device=dev, dtype=torch.long))
elif case == "put":
    n, m = int(sys.argv[2]), int(sys.argv[3])
    def f(x, idx, v):
        return x.index_put((idx,), v)
    args = (torch.randn(n, device=dev), torch.arange(m, device=dev),
            torch.randn(m, device=dev))
else:
    n, m = int(sys.argv[2]), int(sys.argv[3])
    def f(idx, src):
        return torch.zeros(n, device=dev).scatter_add(0, idx, src)
    args = (torch.arange(m, device=dev), torch.randn(m, device=dev))
out = torch.compile(f)(*args)
print("out", tuple(out.shape))
PY
# tuned CASE ARGS: the L2-flush and clone allocations of its recording
tuned() {
	t=$(echo "$*" | tr ' ' _)
	(cd "$tmp" && $MEMSIM record -o "$tmp/$t.csv" -- "$PY" scatter.py "$@") \
		>"$tmp/$t.err" 2>&1 || { echo "record $*: $(tail -3 "$tmp/$t.err")"; return; }
	grep -q "^out " "$tmp/$t.err" || { echo "$*: no result"; return; }
	awk -F, '$3 == "alloc" && $8 == "triton autotune L2 flush" { f++ }
		$3 == "alloc" && $8 == "triton autotune clone" { c++ }
		END { printf "%d %d", f, c }' "$tmp/$t.csv"
}
check() {
	want=$1
	shift
	got=$(tuned "$@")
	[ "$got" = "$want" ] || fail "$*: flushes and clones '$got', want '$want'"
}
check "0 0" select
check "0 0" whole
check "0 0" put 64 2          # a copy of 64, a scatter of 2
check "1 0" put 4096 2        # the copy tuned, not the scatter
check "2 2" put 4096 2048     # both; the scatter's buffer cloned twice
check "1 0" add 4096 16       # the fill tuned, not the scatter
check "2 2" add 4096 1024     # both
finish recorder_compile_scatter.sh
