#!/bin/sh
# memsim record --fake: torch.accelerator's device-generic API on CUDA
# (pytorch/examples and torch.utils.benchmark call it).  Its memory
# functions read the CUDA caching allocator's statistics, which the
# recorder answers for torch.cuda (fake.py): before, each raised
# "device_allocator INTERNAL ASSERT FAILED"; torch.accelerator.synchronize()
# raised "Backend doesn't support synchronizing all streams on device"
# once a torch.compile had initialized the device (PyTorch's
# compiling_optimizer.py recipe, whose benchmark Timer calls it).  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/accelerator.py" \
	2>"$tmp/err" || fail "record: $(grep -v '^ ' "$tmp/err" | tail -3)"
grep -v '^memsim\|^W[0-9]' "$tmp/err" >"$tmp/got"
cat >"$tmp/want" <<'OUT'
acc 4096 4096 True
peak 12288 True
reset 4096
info True 4096
synced
OUT
cmp -s "$tmp/got" "$tmp/want" || fail "accelerator: $(diff "$tmp/want" "$tmp/got")"
finish recorder_accelerator.sh
