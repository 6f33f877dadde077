#!/bin/sh
# memsim record --fake, torch.compile: a value Inductor stores only
# because extern kernels read it (a contiguous clone an einsum's bmm
# reads) is stored when the first of them is lowered, not where the
# post-grad graph computes it (compiled.Program._realize_order).  The
# post-grad pass reorder_for_locality moves such a clone to the graph's
# start when its reader's first argument is the clone: mixture-of-
# experts' MoE, compiled, cloned its 33.5 MB combine tensor first in its
# inference graph and held it beside the experts' matmuls, +4.1% against
# the H100, whose trace (and torch 2.11's post-grad graph, the clone
# first there too) makes it after them; now the H100's peaks to the
# byte.  Here a clone of a permuted input, read by the last bmm, is made
# after the first two bmms' outputs.  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch


@torch.compile
def f(a, comb, w):
    h = torch.relu(torch.bmm(a, w))
    y = torch.bmm(h, w.transpose(1, 2))
    c = comb.permute(0, 2, 1).contiguous()
    return torch.bmm(c, y)


a = torch.randn(4, 256, 64, device="cuda")
w = torch.randn(4, 64, 512, device="cuda")
comb = torch.randn(4, 256, 128, device="cuda")
with torch.no_grad():
    out = f(a, comb, w)
print(tuple(out.shape))
PY
(cd "$tmp" && $MEMSIM record --fake -o a.csv -- "$PY" a.py) >"$tmp/out" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# the graph's buffers in order: bmm 2 MiB, relu 2 MiB, bmm 256 KiB, the
# clone 512 KiB, the last bmm 128 KiB
got=$(awk -F, '$3 == "alloc" && $8 ~ /^compiled/ { printf "%s ", $5 }' "$tmp/a.csv")
[ "$got" = "2097152 2097152 262144 524288 131072 " ] || fail "buffers: '$got'"
finish recorder_compile_realize.sh
