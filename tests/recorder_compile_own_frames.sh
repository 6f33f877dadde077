#!/bin/sh
# torch.compile under memsim record --fake: a graph break inside a loop
# runs the compiled function's frame eagerly, and Dynamo's frame hook
# then sees each frame it calls.  torch.nn's own files are not compiled
# as frames of their own, and F.linear is C++ in PyTorch, so a
# Linear called there runs eagerly on the GPU; the recorder's Python
# replacement of F.linear (fake.py) was compiled instead, a graph of
# its own (sparse-moe-pytorch's language-model head after a graph break
# in its blocks' loop: a compiled 50257-wide matmul and pad_mm's 411 MB
# benchmark where the H100 ran the head eagerly, +12.6% reserved).  The
# replacements' code is skipped as a frame (compiled.skip_own_frames).
# Here the head's 4096 x 1001 output (16,400,384 bytes) is made once, by
# the eager call, and its backward is autograd's AddmmBackward0, not a
# compiled graph's.  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/gb.py" <<'PY'
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(s):
        super().__init__()
        s.blocks = nn.ModuleList(nn.Linear(64, 64) for _ in range(2))
        s.head = nn.Linear(64, 1001)

    def forward(s, x):
        for b in s.blocks:
            x = b(x).relu()
            if x.sum() > 0:     # data-dependent: a graph break in the loop
                x = x * 2
        return s.head(x)


m = torch.compile(M().cuda())
y = m(torch.randn(4096, 64, device="cuda"))
y.sum().backward()
PY
$MEMSIM record --fake -o "$tmp/gb.csv" -- "$PY" "$tmp/gb.py" >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $5 == 16400384 { print $8 }' "$tmp/gb.csv" | tr '\n' '|')
[ "$got" = "OptimizedModule|" ] || fail "the head's output: $got"
grep -q 'CompiledFunctionBackward' "$tmp/gb.csv" &&
	fail "a compiled backward: $(grep -c CompiledFunctionBackward "$tmp/gb.csv") rows"
finish recorder_compile_own_frames.sh
