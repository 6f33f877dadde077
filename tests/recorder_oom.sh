#!/bin/sh
# memsim record --fake --oom: a script that catches out-of-memory and
# tries a smaller batch (Trainer's --auto_find_batch_size, accelerate's
# find_executable_batch_size) takes the path it takes on the GPU.  Under
# --fake an allocation never fails, so such a script kept its first
# batch (a DeBERTa-v2 run_mlm.py at 4096, 80.5 GB on an 80 GB H100).
# With --oom the recorder raises torch.OutOfMemoryError, as the caching
# allocator does, where the allocator modelled beside the recording
# cannot serve the block within --device's memory less its CUDA context
# (or set_per_process_memory_fraction's cap; fragmentation counted:
# tests/recorder_allocator_model.sh), one `oom` assumption each; without
# it, a note names the line where the live blocks passed the device.  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/halve.py" <<'PY'
import torch


def step(bs):
    x = torch.randn(bs, 1024, 1024, device="cuda")  # bs x 4 MiB
    return (x * 2).sum()


frac = float(__import__("sys").argv[1])
if frac < 1:
    torch.cuda.set_per_process_memory_fraction(frac)
bs = 65536
while True:
    try:
        step(bs)
        break
    except torch.OutOfMemoryError as e:
        assert str(e).startswith("CUDA out of memory. Tried to allocate")
        bs //= 2
print("batch", bs)
PY
# 79.19 GiB (h100-80gb) less its context: 2 x 16384 x 4 MiB = 128 GiB
# does not fit, 2 x 8192 x 4 MiB = 64 GiB does
$MEMSIM record --oom --device h100-80gb -o "$tmp/h.csv" -- "$PY" \
	"$tmp/halve.py" 1 >"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q '^batch 8192$' "$tmp/out" || fail "batch: $(grep batch "$tmp/out")"
grep -q 'assumptions (oom 3)' "$tmp/out" ||
	fail "assumptions: $(grep assumption "$tmp/out")"
# 65536 and 32768: the input does not fit (line 5); 16384: the product
n=$(grep -c 'annotate,0,0,0,assumption,oom halve.py:5 ' "$tmp/h.csv")
[ "$n" = 2 ] || fail "oom rows at halve.py:5: $n"
n=$(grep -c 'annotate,0,0,0,assumption,oom halve.py:6 ' "$tmp/h.csv")
[ "$n" = 1 ] || fail "oom rows at halve.py:6: $n"
$MEMSIM run --capacity h100-80gb "$tmp/h.csv" >"$tmp/run" ||
	fail "run: $(cat "$tmp/run")"
grep -q '^allocated  peak 64.00 GiB' "$tmp/run" ||
	fail "replay: $(grep allocated "$tmp/run")"
# a cap of a quarter of the device: 2 x 2048 x 4 MiB = 16 GiB
$MEMSIM record --oom --device h100-80gb -o "$tmp/q.csv" -- "$PY" \
	"$tmp/halve.py" 0.25 >"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q '^batch 2048$' "$tmp/out" || fail "fraction: $(grep batch "$tmp/out")"
# without --oom: the first batch, and a note with the line
$MEMSIM record --device h100-80gb -o "$tmp/n.csv" -- "$PY" \
	"$tmp/halve.py" 1 >"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q '^batch 65536$' "$tmp/out" || fail "no --oom: $(grep batch "$tmp/out")"
grep -q "note: the caching allocator ran out of the h100-80gb's memory .* at halve.py:5" \
	"$tmp/out" || fail "note: $(grep note "$tmp/out")"
$MEMSIM record --oom --symbolic B=4 -o "$tmp/s.csv" -- "$PY" "$tmp/halve.py" 1 \
	>"$tmp/out" 2>&1 && fail "--oom --symbolic accepted"
grep -q -- "--oom: not with --symbolic" "$tmp/out" || fail "refusal: $(tail -1 "$tmp/out")"
[ -e "$tmp/s.csv" ] && fail "a refused recording wrote its trace"
# accelerate's find_executable_batch_size, where installed
if "$PY" -c 'import accelerate' 2>/dev/null; then
	cat >"$tmp/acc.py" <<'PY'
import torch
from accelerate.utils import find_executable_batch_size

model = torch.nn.Linear(4096, 4096).cuda()


@find_executable_batch_size(starting_batch_size=1 << 23)
def train(batch_size):
    x = torch.randn(batch_size, 4096, device="cuda")
    model(x).sum().backward()
    print("trained at", batch_size)


train()
PY
	$MEMSIM record --oom --device h100-80gb -o "$tmp/a.csv" -- "$PY" \
		"$tmp/acc.py" >"$tmp/out" 2>&1 || fail "accelerate: $(tail -3 "$tmp/out")"
	b=$(sed -n 's/^trained at //p' "$tmp/out")
	[ -n "$b" ] && [ "$b" -lt 4194304 ] || fail "accelerate's batch: '$b'"
	$MEMSIM run --capacity h100-80gb "$tmp/a.csv" >"$tmp/run" ||
		fail "run: $(cat "$tmp/run")"
	grep -q 'out of memory' "$tmp/run" && fail "the replay ran out of memory"
fi
finish recorder_oom
