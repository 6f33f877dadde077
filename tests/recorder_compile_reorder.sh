#!/bin/sh
# torch.compile under memsim record --fake: Inductor's scheduler runs the
# kernels in the order of least estimated peak memory
# (reorder_for_peak_memory: the graph's own order, topological_sort_lpmf,
# _bfs and _dfs; traces/memsim_record/peakorder.py).  A compiled
# inference graph of 4 blocks returns, beside its output, a small slice
# of each block's 8 MiB hidden value: in the graph's order the 4 slices
# are the last kernels and every hidden value lives to the end; the
# least-peak order takes each slice right after its block, which frees
# the hidden value there (Mamba2's compiled inference returns its conv
# states so; it was 51% over its H100 peak).  And cudagraph trees
# (mode="reduce-overhead") free a warm-up's outputs when the next call
# begins a new generation (dealloc_current_path_weakrefs), before the
# capture, whatever Python still holds: against the H200 trace of
# tests/recorder/pools.py's compiled MLP.  Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/ro.py" <<'PY'
import torch, torch.nn as nn
L, B, D = 4, 1024, 512
class M(nn.Module):
    def __init__(s):
        super().__init__()
        s.inp = nn.ModuleList(nn.Linear(D, 4 * D) for _ in range(L))
        s.out = nn.ModuleList(nn.Linear(4 * D, D) for _ in range(L))
    def forward(s, x):
        hs = []
        for i, o in zip(s.inp, s.out):
            a = i(x)
            x = x + o(torch.relu(a))
            hs.append(a)
        return x, [h[:, :8] * 2 for h in hs]
c = torch.compile(M().cuda().eval())
with torch.no_grad():
    for _ in range(2):
        y, st = c(torch.randn(B, D, device="cuda"))
PY
$MEMSIM record -o "$tmp/ro.csv" -- "$PY" "$tmp/ro.py" >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
# Each slice (1024 x 8 floats, 32768 bytes) is made before the next
# block's hidden value (1024 x 2048 floats): no two slices in a row.
got=$(awk -F, '$3 == "alloc" && ($5 == 32768 || $5 == 8388608) { printf "%s ", ($5 == 32768 ? "s" : "h") }' "$tmp/ro.csv")
case "$got" in
*"s s"*) fail "slices at the end: $got" ;;
*s*) ;;
*) fail "no slices: $got" ;;
esac
# At the peak of the second call, one hidden value lives (two while the
# next block's is made), not four.
n=$(awk -F, 'NR > 1 && $3 == "alloc" { live[$4] = $5; tot += $5; if (tot > peak) { peak = tot; h = 0; for (k in live) if (live[k] == 8388608) h++ } }
	NR > 1 && $3 == "free_completed" && ($4 in live) { tot -= live[$4]; delete live[$4] } END { print h }' "$tmp/ro.csv")
[ "$n" -le 2 ] || fail "$n hidden values of 8 MiB live at the peak"

# cudagraph trees: the warm-up's output (64 x 1000 floats) is freed
# before the capture's pools begin, as on the H200 (B: pool_begin; a, f:
# that output's alloc and free).
printf 'import sys\nsys.path.insert(0, "%s")\nimport pools\npools.compiled()\n' \
	"$SRC/recorder" >"$tmp/pc.py"
$MEMSIM record -o "$tmp/pc.csv" -- "$PY" "$tmp/pc.py" >"$tmp/err" 2>&1 ||
	fail "record pools compiled: $(tail -3 "$tmp/err")"
seqof() { awk -F, 'NR > 1 && ($3 == "pool_begin" || (($3 == "alloc" || $3 == "free_completed") && $5 == 256000)) {
	printf "%s%s", s, ($3 == "pool_begin" ? "B" : ($3 == "alloc" ? "a" : "f")); s = " " } END { print "" }' "$1"; }
want=$(seqof "${MSIM_TESTDATA:-tests/data}/pools/compiled.real.csv")
got=$(seqof "$tmp/pc.csv")
[ "$got" = "$want" ] || fail "pools compiled: '$got', the H200 '$want'"
finish recorder_compile_reorder.sh
