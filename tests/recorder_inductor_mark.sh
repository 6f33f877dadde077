#!/bin/sh
# memsim record --fake: torch._inductor.cudagraph_mark_step_begin(), the
# other public name of torch.compiler.cudagraph_mark_step_begin(), counts
# a new step as that one does.  Both import cudagraph_trees, which the
# CPU build that records cannot (torch._C has no
# _cuda_CUDAAllocator_AllocatorState): LightGlue's compile() calls it
# before compiling its layers with mode="reduce-overhead", and the
# recording stopped there with ImportError.  The two names give the same
# trace.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/p.py" <<'PY'
import sys
import torch
mark = {"inductor": lambda: torch._inductor.cudagraph_mark_step_begin(),
        "compiler": torch.compiler.cudagraph_mark_step_begin}[sys.argv[1]]
lin = torch.nn.Linear(256, 256).cuda().eval()
f = torch.compile(lin, mode="reduce-overhead")
mark()
with torch.no_grad():
    for i in range(3):
        mark()
        y = f(torch.randn(64, 256, device="cuda"))
        z = y.clone()
print("done", tuple(z.shape))
PY
for n in inductor compiler; do
	$MEMSIM record --fake -o "$tmp/$n.csv" -- "$PY" "$tmp/p.py" $n \
		>"$tmp/err" 2>&1 || fail "record $n: $(tail -3 "$tmp/err")"
	grep -q "^done (64, 256)" "$tmp/err" || fail "$n: $(tail -3 "$tmp/err")"
done
[ -s "$tmp/inductor.csv" ] && [ -s "$tmp/compiler.csv" ] || fail "no traces"
a=$($MEMSIM run "$tmp/inductor.csv" | grep -E '^(allocated|reserved)')
b=$($MEMSIM run "$tmp/compiler.csv" | grep -E '^(allocated|reserved)')
[ "$a" = "$b" ] || fail "torch._inductor's mark: $a; torch.compiler's: $b"
finish recorder_inductor_mark.sh
