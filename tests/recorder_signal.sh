#!/bin/sh
# memsim record --fake when things go wrong (issue 25, failure kinds 7 and
# 8): a recorder killed by a signal is reported with the Python line that
# was running; a script that raises is reported with its own traceback, not
# the recorder's frames; nn.TransformerEncoder records; an operator without
# a fake kernel is refused in one line naming it (the fake mode would run
# its CUDA kernel), while on CPU tensors it runs for real.  Skips (77)
# without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

# A native crash (here SIGSEGV sent to itself) inside the script.
cat >"$tmp/crash.py" <<'PY'
import os
import signal
import torch

def crash():
    torch.zeros(4, device="cuda")
    os.kill(os.getpid(), signal.SIGSEGV)

crash()
PY
$MEMSIM record -o "$tmp/crash.csv" -- "$PY" "$tmp/crash.py" >"$tmp/out" 2>&1 &&
	fail "crash: exit 0"
grep -q "^memsim: record: the recorder was killed by signal 11 while running File \"$tmp/crash.py\", line 7 in crash; no trace written$" "$tmp/out" ||
	fail "crash: the Python line: $(tail -1 "$tmp/out")"
[ -e "$tmp/crash.csv" ] && fail "crash: a trace written"
ls "$tmp" | grep -q 'crash.csv.fault' && fail "crash: the fault file left"

# A script raising in its own function, called through a helper module:
# its frames, not memsim_record's.
mkdir "$tmp/pkg"
cat >"$tmp/pkg/helper.py" <<'PY'
def step(model, x):
    return model(x).view(3, -1)
PY
cat >"$tmp/raise.py" <<'PY'
import torch
from pkg.helper import step

def train():
    m = torch.nn.Linear(8, 8).cuda()
    step(m, torch.randn(4, 8, device="cuda"))

train()
PY
$MEMSIM record -o "$tmp/raise.csv" -- "$PY" "$tmp/raise.py" >"$tmp/out" 2>&1 &&
	fail "raise: exit 0"
grep -q "raise.py\", line 8, in <module>" "$tmp/out" || fail "raise: the script's frame"
grep -q "raise.py\", line 6, in train" "$tmp/out" || fail "raise: the script's function"
grep -q "helper.py\", line 2, in step" "$tmp/out" || fail "raise: the helper's frame"
grep -q "^RuntimeError: shape '\[3, -1\]' is invalid" "$tmp/out" || fail "raise: the error"
grep -q "memsim_record\|runpy" "$tmp/out" && fail "raise: the recorder's frames shown"

# nn.TransformerEncoder: built on the CPU and on the GPU, trained, then in
# eval with a padding mask (the fast path).
cat >"$tmp/enc.py" <<'PY'
import torch
import torch.nn as nn
for first in (False, True):
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, norm_first=first)
    enc = nn.TransformerEncoder(layer.cuda() if first else layer, 2).cuda()
    x = torch.randn(2, 10, 64, device="cuda")
    enc(x).sum().backward()
    enc.eval()
    with torch.no_grad():
        enc(x, src_key_padding_mask=torch.zeros(2, 10, dtype=torch.bool, device="cuda"))
print("encoded")
PY
$MEMSIM record -o "$tmp/enc.csv" -- "$PY" "$tmp/enc.py" >"$tmp/out" 2>&1 ||
	fail "TransformerEncoder: $(tail -3 "$tmp/out")"
grep -q "^encoded$" "$tmp/out" || fail "TransformerEncoder: not run"

# An operator with a CPU and a CUDA kernel and no fake one: real on CPU
# tensors, refused on GPU ones, naming it.
cat >"$tmp/op.py" <<'PY'
import torch
lib = torch.library.Library("memsimtest", "DEF")
lib.define("twice(Tensor x) -> Tensor")
lib.impl("twice", lambda x: x * 2, "CPU")
lib.impl("twice", lambda x: x * 2, "CUDA")
print("cpu", torch.ops.memsimtest.twice(torch.arange(3)).tolist())
torch.ops.memsimtest.twice(torch.ones(3, device="cuda"))
PY
$MEMSIM record -o "$tmp/op.csv" -- "$PY" "$tmp/op.py" >"$tmp/out" 2>&1 &&
	fail "custom op: exit 0"
grep -q "^cpu \[0, 2, 4\]$" "$tmp/out" || fail "custom op on the CPU: not run for real"
grep -q "raised RuntimeError: memsimtest::twice has no fake (meta) kernel" "$tmp/out" ||
	fail "custom op: $(grep raised "$tmp/out")"
finish recorder_signal
