#!/bin/sh
# memsim record --fake: a module's buffers moved by Module._apply
# (.cuda(), .to(device); Lightning's DeviceDtypeModuleMixin.to) are
# "parameter", site CLASS.NAME, as memsim explain reads a real snapshot
# (docs/guide.md: under Module._apply is parameter, buffers included), not
# "input" at the .to() call.  Shown by Lightning-AI/tutorials' reverse-task
# Transformer (kit r39d): its PositionalEncoding's 5000 x 32 `pe` buffer,
# 625 KiB "input" at device_dtype_mixin.py:59 in memsim explain.  Skips
# (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/buf.py" <<'PY'
import torch
import torch.nn as nn

class PE(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("pe", torch.zeros(1, 5000, 32), persistent=False)
        self.lin = nn.Linear(32, 32)

m = nn.Sequential(PE(), nn.BatchNorm1d(64)).to("cuda")
x = torch.randn(8, 64, device="cuda")
PY
$MEMSIM record -o "$tmp/buf.csv" -- "$PY" "$tmp/buf.py" >"$tmp/out" 2>&1 ||
	fail "record: $(tail -3 "$tmp/out")"
# the 640000-byte pe buffer; BatchNorm1d's running_mean and running_var (256
# bytes each), its num_batches_tracked (8 bytes)
row() { grep ",alloc,.*,$1,$2\$" "$tmp/buf.csv" | wc -l; }
[ "$(row parameter PE.pe)" -eq 1 ] || fail "pe: $(grep ',640000,' "$tmp/buf.csv")"
[ "$(row parameter BatchNorm1d.running_mean)" -eq 1 ] || fail "running_mean: $(grep ',alloc,.*,256,' "$tmp/buf.csv")"
[ "$(row parameter BatchNorm1d.running_var)" -eq 1 ] || fail "running_var"
[ "$(row parameter BatchNorm1d.num_batches_tracked)" -eq 1 ] || fail "num_batches_tracked: $(grep ',alloc,.*,8,' "$tmp/buf.csv")"
# the program's own x is still input
n=$(grep -c ',alloc,.*,2048,0,input,' "$tmp/buf.csv")
[ "$n" -eq 1 ] || fail "x: $(grep ',2048,' "$tmp/buf.csv")"
finish recorder_buffer_category
