#!/bin/sh
# memsim record --fake: torch.linalg.lstsq on the host (a fake CPU
# tensor, dispatch.py's Dispatch._lstsq).  The op carries the
# dynamic_output_shape tag and the fake mode refused it: efficient-kan's
# KANLinear fits its spline coefficients to noise with lstsq in its
# __init__, on the CPU before .to("cuda") (DynamicOutputShapeException,
# no trace).  Every matrix taken of full rank (assumption
# linalg:full-rank), the sizes are static: the solution (*, n, nrhs),
# column-major as ATen leaves it, the residuals (*, nrhs) where m > n,
# the rank (*) for the CPU's default driver gelsy (and gelsd, gelss), the
# singular values (*, min(m, n)) for gelsd and gelss; nothing on the
# GPU until the program copies the result there.  Where A's and b's
# values are known, the solution's too, by the program's own driver.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
class Spline(torch.nn.Module):
    # efficient-kan's KANLinear.reset_parameters: noise over 1 MiB (a
    # fake host tensor while a module is built), its coefficients by lstsq
    def __init__(self, i=784, o=64, g=5, k=3):
        super().__init__()
        torch.manual_seed(0)
        x = torch.linspace(-1, 1, g + 1).expand(i, g + 1).contiguous()
        A = torch.stack([torch.cos(x * j) for j in range(g + k)], -1)
        noise = torch.rand(g + 1, i, o) - 0.5
        s = torch.linalg.lstsq(A, noise.transpose(0, 1))
        print("s", tuple(s.solution.shape), s.solution.stride(),
              tuple(s.residuals.shape), tuple(s.rank.shape),
              tuple(s.singular_values.shape))
        self.w = torch.nn.Parameter(s.solution.permute(2, 0, 1).contiguous())
        print("sum %.3f" % self.w.sum().item())
        B = torch.randn(300, 8, 5) + 0
        r = torch.linalg.lstsq(B, torch.randn(300, 8, 2048) + 0,
                               driver="gelsd")
        print("r", tuple(r.solution.shape), r.solution.stride(),
              tuple(r.residuals.shape), tuple(r.rank.shape),
              tuple(r.singular_values.shape))
m = Spline().to("cuda")
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# as the CPU makes them: the solution column-major, no residuals
# (m < n), the rank (gelsy); for m > n with gelsd, the residuals and
# singular values too
grep -q "^s (784, 8, 64) (512, 1, 8) (0,) (784,) (0,)$" "$tmp/out" || fail "s: $(cat "$tmp/out")"
grep -q "^r (300, 5, 2048) (16384, 1, 8) (300, 2048) (300,) (300, 5)$" "$tmp/out" || fail "r: $(cat "$tmp/out")"
got=$(awk -F, '$3 == "alloc" { printf "%s%s", s, $5; s = " " } END { print "" }' "$tmp/a.csv")
# the GPU's one tensor: w, 64 * 784 * 8 floats
[ "$got" = "1605632" ] || fail "allocations: $got"
grep -c ',assumption,linalg:full-rank a.py:[0-9]* =full rank$' "$tmp/a.csv" | grep -q '^2$' ||
	fail "assumptions: $(grep ',assumption,' "$tmp/a.csv")"
# under --values cpu: the values, as the CPU's own run computes them
# (the plain run stops at .to("cuda") without a GPU, after the sum)
want=$(cd "$tmp" && "$PY" a.py 2>&1 | grep '^sum ')
[ -n "$want" ] || fail "no sum from the plain run"
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/b.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record --values cpu: $(tail -3 "$tmp/out")"
grep -qxF "$want" "$tmp/out" || fail "'$want' not in: $(cat "$tmp/out")"
# Host code on a Parameter's views (fake: pykan's KANLayer fits its
# coefficients from its grid Parameter so): where A's values are not
# known the outputs are fake ones (they were real tensors of
# uninitialized memory: pykan's coefficients of 1e23); where they are
# (--values cpu) the CPU's own result, real
cat >"$tmp/b.py" <<'PY'
import torch
g = torch.nn.Parameter(torch.linspace(-1, 1, 48).reshape(6, 8)).requires_grad_(False)
A = g[:, :] + torch.eye(6, 8)
b = torch.linspace(0, 1, 12).reshape(6, 2)
s = torch.linalg.lstsq(A, b).solution
print(type(A).__name__, type(s).__name__, "sum %.4f" % s.sum().item())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/c.csv" -- "$PY" b.py) >"$tmp/out" 2>&1
grep -qxF "FakeTensor FakeTensor sum 1.0000" "$tmp/out" || fail "b.py: $(cat "$tmp/out")"
want=$(cd "$tmp" && "$PY" b.py 2>&1 | sed -n 's/^Tensor Tensor //p')
[ -n "$want" ] || fail "no sum from the plain run of b.py"
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/c.csv" -- "$PY" b.py) >"$tmp/out" 2>&1
grep -qxF "FakeTensor Tensor $want" "$tmp/out" || fail "b.py, --values cpu: $(cat "$tmp/out")"
finish recorder_lstsq_host.sh
