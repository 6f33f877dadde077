#!/bin/sh
# memsim record --fake --values cpu: GradScaler skips a step whose
# gradients have an inf or NaN and backs its scale off, as the real run
# does.  The recorder took every step (assumption gradscaler:no-overflow),
# right where the gradients' values are not had, but --values cpu has
# them: unscale_'s _amp_foreach_non_finite_check_and_unscale_ runs on
# them and found_inf has its real value, so GradScaler's own
# _maybe_opt_step decides.  A half-precision output over 65504 overflows
# on the first step (scale 65536 -> 32768, weights unchanged); the second
# step's scaled gradient, 2 * 24 * 32768, overflows too (16384).  The
# same script on the CPU (autocast and GradScaler of the CPU) prints the
# same.  The rules mode still takes both (the assumption, counted).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import sys
import torch
dev = sys.argv[1]
lin = torch.nn.Linear(8, 4).to(dev)
torch.nn.init.constant_(lin.weight, 300.0)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
scaler = torch.amp.GradScaler(dev)
for x in (torch.full((4, 8), 300.0), torch.full((4, 8), 0.01)):
    before = lin.weight.detach().clone()
    with torch.autocast(dev, dtype=torch.float16):
        loss = lin(x.to(dev)).float().pow(2).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    print("step", scaler.get_scale(), torch.equal(before, lin.weight.detach()))
PY
(cd "$tmp" && "$PY" a.py cpu) >"$tmp/cpu" 2>&1 || fail "on the CPU: $(cat "$tmp/cpu")"
printf 'step 32768.0 True\nstep 16384.0 True\n' >"$tmp/want"
cmp -s "$tmp/cpu" "$tmp/want" || fail "the CPU's run: $(cat "$tmp/cpu")"
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/a.csv" -- "$PY" a.py cuda) \
	>"$tmp/err" 2>&1 || fail "recording: $(tail -3 "$tmp/err")"
grep '^step' "$tmp/err" >"$tmp/got"
cmp -s "$tmp/got" "$tmp/want" || fail "--values cpu: $(cat "$tmp/err")"
$MEMSIM info "$tmp/a.csv" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
grep -q 'gradscaler' "$tmp/info" && fail "assumed: $(grep gradscaler "$tmp/info")"
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/b.csv" -- "$PY" a.py cuda) \
	>"$tmp/err" 2>&1 || fail "recording (rules): $(tail -3 "$tmp/err")"
grep -c '^step 65536.0 False$' "$tmp/err" | grep -qx 2 || fail "rules: $(cat "$tmp/err")"
$MEMSIM info "$tmp/b.csv" >"$tmp/info" 2>&1 || fail "info b: $(cat "$tmp/info")"
grep -q 'gradscaler:no-overflow' "$tmp/info" || fail "not assumed: $(cat "$tmp/info")"
finish recorder_gradscaler_cpu.sh
