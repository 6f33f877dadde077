#!/bin/sh
# Lazy modules under memsim record --fake (fake.py's _lazy_cuda): a
# LazyLinear / LazyConv2d / LazyBatchNorm2d model moved to the GPU
# (.cuda(), .to("cuda", dtype=...)) before its first forward, which
# materializes its parameters and buffers there.  The peaks are those of
# the two scripts run for real on an H200 (PyTorch 2.11, 1 December
# 2026), exact, and the parameters are recorded where the real run makes
# them: at the first forward, weight then bias, after the input.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
peaks() { # TRACE -> "allocated reserved" of its replay
	$MEMSIM run --json "$1" >"$tmp/p.json" || { echo "run failed"; return; }
	echo "$(key allocated_bytes.all.peak "$tmp/p.json") $(key reserved_bytes.all.peak "$tmp/p.json")"
}
cat >"$tmp/lazy.py" <<'PY'
import torch
m = torch.nn.Sequential(torch.nn.LazyLinear(64), torch.nn.ReLU(), torch.nn.LazyLinear(8)).cuda()
x = torch.randn(16, 32, device="cuda")
y = m(x)
y.sum().backward()
assert m[0].weight.shape == (64, 32) and m[0].weight.is_cuda
PY
cat >"$tmp/lazy2.py" <<'PY'
import torch
m = torch.nn.Sequential(torch.nn.LazyConv2d(8, 3), torch.nn.LazyBatchNorm2d(), torch.nn.Flatten(), torch.nn.LazyLinear(10)).to("cuda", dtype=torch.float16)
x = torch.randn(4, 3, 16, 16, device="cuda", dtype=torch.float16)
y = m(x)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
y.float().sum().backward()
opt.step()
assert m[0].weight.dtype == torch.float16 and m[1].running_mean.dtype == torch.float16
assert m[1].running_mean.is_cuda and isinstance(m[3].weight, torch.nn.Parameter)
assert type(m[3]) is torch.nn.Linear
assert not isinstance(m[3].weight, torch.nn.parameter.UninitializedParameter)
PY
for s in lazy lazy2; do
	(cd "$tmp" && $MEMSIM record -o "$tmp/$s.csv" -- "$PY" "$s.py") \
		>"$tmp/err" 2>&1 || fail "$s: $(tail -3 "$tmp/err")"
done
[ "$(peaks "$tmp/lazy.csv")" = "68187648 69206016" ] ||
	fail "lazy: peaks $(peaks "$tmp/lazy.csv"), the H200's 68187648 69206016"
[ "$(peaks "$tmp/lazy2.csv")" = "68273664 69206016" ] ||
	fail "lazy2: peaks $(peaks "$tmp/lazy2.csv"), the H200's 68273664 69206016"
# the H200's first requests: the input, then LazyLinear's weight and bias
# as parameters
got=$(awk -F, '$3 == "alloc" && n++ < 3 { printf "%s/%s ", $5, $7 }' "$tmp/lazy.csv")
[ "$got" = "2048/input 8192/parameter 256/parameter " ] || fail "lazy: first requests $got"
finish recorder_lazy
