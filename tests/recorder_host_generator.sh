#!/bin/sh
# memsim record --fake: a CPU factory op that draws from a generator
# the program made and passed (generator=) is real while a module is
# built, as the script's own data is: only a weight's initialization
# (the default generator) stays fake there.  e3nn's normalize2mom takes
# the second moment of its activation over 1,000,000 normal samples of
# torch.Generator().manual_seed(0) (8 MB of float64, over
# HOST_FAKE_BYTES) in its __init__ and reads it with .item() to decide
# whether its forward rescales: fake, the --item-float default 1.0 said
# not, and every rescaling multiplication (an activation's size) was
# missing from the trace (e3nn's spherical CNN: -8.6% on allocated).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
class Act(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        z = torch.randn(1_000_000, generator=gen, dtype=torch.float64)
        self.cst = f(z).pow(2).mean().pow(-0.5).item()
        self.w = torch.nn.Parameter(torch.randn(1024, 1024))
        self.f = f
    def forward(self, x):
        y = self.f(x @ self.w)
        return y if abs(self.cst - 1) < 1e-4 else y.mul(self.cst)
m = Act(torch.relu)
print("cst %.3f" % m.cst)
print("w", m.w[0, 0].item())
m = m.cuda()
y = m(torch.randn(64, 1024, device="cuda"))
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# E[relu(z)^2] = 1/2: the constant is sqrt(2)
grep -qxF "cst 1.416" "$tmp/out" || fail "cst: $(cat "$tmp/out")"
# the weight, of the default generator, stays fake: its value assumed
grep -q ',assumption,item:float a.py:15 ' "$tmp/a.csv" ||
	fail "the weight was made real: $(grep ',assumption,' "$tmp/a.csv")"
got=$(awk -F, '$3 == "alloc" { printf "%s%s", s, $5; s = " " } END { print "" }' "$tmp/a.csv")
# w, x, x @ w (and cuBLAS's workspace), relu, the rescaling multiplication
[ "$got" = "4194304 262144 262144 33554432 262144 262144" ] || fail "allocations: $got"
finish recorder_host_generator.sh
