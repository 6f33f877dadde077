#!/bin/sh
# memsim record --fake: `t.data = u` swaps a fake tensor's storage, and
# the values known of u (a shadow, a uniform value; kept by tensor) did
# not follow: t's were forgotten.  PEFT casts a bf16 model's adapters
# back to float32 so (cast_adapter_dtype: param.data =
# param.data.to(torch.float32)), and under --values cpu every LoRA
# weight, then the loss, had no values (item:bool at the Trainer's NaN
# check of each step's loss, item:float at its logging).  t now keeps
# what is known of u's elements: under --values cpu the weights' sums
# before and after are the same, and under the rules a swapped arange's
# sum and a mask of it are exact.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import math, torch, torch.nn as nn
torch.manual_seed(0)
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.ModuleDict({"a": nn.Linear(128, 8, bias=False)})
        nn.init.kaiming_uniform_(self.l["a"].weight, a=math.sqrt(5))
        self.l["a"] = self.l["a"].to("cpu", dtype=torch.bfloat16)
m = M()
p = m.l["a"].weight
s0 = p.float().abs().sum().item()
p.data = p.data.to(torch.float32)
s1 = p.abs().sum().item()
m.to("cuda")
s2 = m.l["a"].weight.abs().sum().item()
print("weights", s0 == s1 == s2, s0 > 1.0)
PY
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record a: $(tail -3 "$tmp/err")"
grep -qxF "weights True True" "$tmp/err" || fail "a: $(cat "$tmp/err")"
grep -q ',assumption,' "$tmp/a.csv" && fail "a: $(grep ',assumption,' "$tmp/a.csv")"
cat >"$tmp/b.py" <<'PY'
import torch
p = torch.nn.Parameter(torch.arange(6.0, device="cuda"))
p.data = p.data.to(torch.bfloat16)
print("sum", p.sum().item())
p.data = p.data.to(torch.float32)
print("mask", (p > 3).nonzero().shape[0])
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/b.csv" -- "$PY" b.py) \
	>"$tmp/err" 2>&1 || fail "record b: $(tail -3 "$tmp/err")"
for want in "sum 15.0" "mask 2"; do
	grep -qxF "$want" "$tmp/err" || fail "b: '$want' not in: $(cat "$tmp/err")"
done
finish recorder_swap_data_values.sh
