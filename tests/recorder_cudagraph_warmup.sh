#!/bin/sh
# memsim record --fake, a function compiled with mode="reduce-overhead"
# called four times in one generation (cudagraph_mark_step_begin() once,
# then never again) while each call's output stays alive: cudagraph
# trees' path keeps warming up (CUDAGraphTreeManager._run's in_warmup:
# try_end_curr_warmup ends it only in a new generation or once all the
# path's outputs are dead), so every call runs eagerly in the pool and
# none is recorded.  On the H100 (torch 2.11) the four calls made four
# cuBLAS workspaces (clear_cublas_manager around each warm-up) and four
# outputs.  The recorder warmed the first call up, recorded the second
# (a static input copy) and replayed the others (no output of their
# own): LightGlue's compiled layers, -31% of the real peak.  Skips (77)
# without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/w.py" <<'PY'
import torch

w = torch.randn(1024, 1024, device="cuda")


@torch.compile(mode="reduce-overhead")
def f(x):
    return torch.relu(x @ w) * 2


torch.compiler.cudagraph_mark_step_begin()
x = torch.randn(64, 1024, device="cuda")
outs = []
with torch.no_grad():
    for i in range(4):
        x = f(x)
        outs.append(x)
PY
(cd "$tmp" && $MEMSIM record --fake -o w.csv -- "$PY" w.py) >"$tmp/out" 2>&1 ||
	fail "record: $(tail -3 "$tmp/out")"
n=$(grep -c ',alloc,.*,cuBLAS workspace$' "$tmp/w.csv")
[ "$n" = 4 ] || fail "cuBLAS workspaces: $n, want 4 (one a warm-up)"
grep -q 'cudagraph static input' "$tmp/w.csv" &&
	fail "a graph was recorded (its static input copy) while the path warms up"
# each call's output (64 x 1024 fp32) its own, all four alive at the end
n=$(awk -F, '$3 == "alloc" && $5 == 262144 && $NF == "compiled f"' "$tmp/w.csv" | wc -l)
[ "$n" -ge 4 ] || fail "compiled outputs: $n, want at least 4"
finish recorder_cudagraph_warmup
