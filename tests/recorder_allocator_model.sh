#!/bin/sh
# memsim record --fake: torch.cuda.memory_reserved(), max_memory_reserved(),
# memory_stats(), mem_get_info() and --oom's out-of-memory errors are those
# of the caching allocator modelled beside the recording (libmemsim's
# memsim_live_*, traces/memsim_record/live.py), the one `memsim run`
# replays the recording with.  Before, they answered the live blocks:
# reserved as allocated, no segment, and --oom let a program fill the
# device to its last byte of live blocks where the GPU's fragmentation
# stops it earlier.  Both scripts print on an H100 (PyTorch 2.11) what
# this test holds.  Without the library (MEMSIM_LIBRARY naming none) the
# answers are the live blocks, with assumption allocator-model:absent.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
# Eight blocks of 30 MiB (a segment each: above 10 MiB, round_size to
# 2 MiB), every other freed; three of 50 MiB fit in none of the freed
# ones: 11 segments, 390 MiB reserved, 270 MiB allocated; empty_cache()
# gives back the four free segments.
cat >"$tmp/a.py" <<'PY'
import torch
a = [torch.empty(30 << 20, dtype=torch.uint8, device="cuda") for _ in range(8)]
for i in range(0, 8, 2):
    a[i] = None
b = [torch.empty(50 << 20, dtype=torch.uint8, device="cuda") for _ in range(3)]
s = torch.cuda.memory_stats()
free, total = torch.cuda.mem_get_info()
print(torch.cuda.memory_allocated(), torch.cuda.memory_reserved(),
      torch.cuda.max_memory_reserved(), s["segment.all.current"],
      s["num_device_alloc"], s["inactive_split_bytes.all.current"],
      total - free - torch.cuda.memory_reserved() > 0)
torch.cuda.empty_cache()
print(torch.cuda.memory_reserved(), torch.cuda.memory_stats()["num_device_free"])
PY
# Under a 400 MiB cap: fifty 4 MiB blocks fill ten 20 MiB segments, four
# of every five freed (40 MiB live, 200 MiB reserved, no segment free to
# give back); blocks of 60 MiB then fit three times (200 + 3 x 60 <= 400),
# not six (40 + 6 x 60) as the live blocks alone would have it.
cat >"$tmp/b.py" <<'PY'
import torch
cap = 400 << 20
torch.cuda.set_per_process_memory_fraction(
    cap / torch.cuda.get_device_properties(0).total_memory)
a = [torch.empty(4 << 20, dtype=torch.uint8, device="cuda") for _ in range(50)]
a = a[::5]
k, held = 0, []
try:
    while True:
        held.append(torch.empty(60 << 20, dtype=torch.uint8, device="cuda"))
        k += 1
except torch.OutOfMemoryError as e:
    print("fits", k, torch.cuda.memory_reserved(),
          torch.cuda.memory_stats()["num_ooms"])
    print(e)
PY
(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o "$tmp/a.csv" -- \
	"$PY" a.py) >"$tmp/out" 2>&1 || fail "record a.py: $(tail -3 "$tmp/out")"
l1=$(sed -n 1p "$tmp/out")
[ "$l1" = "283115520 408944640 408944640 11 11 0 True" ] ||
	fail "a.py: '$l1', expected '283115520 408944640 408944640 11 11 0 True'"
l2=$(sed -n 2p "$tmp/out")
[ "$l2" = "283115520 4" ] || fail "a.py after empty_cache: '$l2', expected '283115520 4'"
# The recording replays to what the script was told.
got=$(run_peaks "$tmp/a.csv")
[ "$got" = "283115520 408944640" ] ||
	fail "memsim run a.csv: '$got', expected '283115520 408944640'"
(cd "$tmp" && $MEMSIM record --fake --oom --device h100-80gb -o "$tmp/b.csv" \
	-- "$PY" b.py) >"$tmp/out" 2>&1 || fail "record b.py: $(tail -3 "$tmp/out")"
l1=$(sed -n 1p "$tmp/out")
[ "$l1" = "fits 3 398458880 1" ] || fail "b.py --oom: '$l1', expected 'fits 3 398458880 1'"
grep -q "reserved by PyTorch but unallocated" "$tmp/out" ||
	fail "b.py --oom: no CUDACachingAllocator wording: $(tail -2 "$tmp/out")"
# The settings the script runs with, also when it asks before its first
# allocation: under expandable_segments three blocks of 30 MiB map 100
# MiB of one segment in pages of 20 MiB (90 MiB in three segments by
# default; the model opened at the query had the defaults).
cat >"$tmp/e.py" <<'PY'
import torch
print(torch.cuda.memory_reserved())
a = [torch.empty(30 << 20, dtype=torch.uint8, device="cuda") for _ in range(3)]
print(torch.cuda.memory_reserved())
PY
(cd "$tmp" && PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True $MEMSIM \
	record --fake --device h100-80gb -o "$tmp/e.csv" -- "$PY" e.py) \
	>"$tmp/out" 2>&1 || fail "record e.py: $(tail -3 "$tmp/out")"
got=$(sed -n 1,2p "$tmp/out" | tr '\n' ' ')
[ "$got" = "0 104857600 " ] || fail "e.py: '$got', expected '0 104857600 '"
got=$(run_peaks "$tmp/e.csv")
[ "$got" = "94371840 104857600" ] ||
	fail "memsim run e.csv: '$got', expected '94371840 104857600'"
# Without the library: the live blocks, said.
(cd "$tmp" && MEMSIM_LIBRARY=$tmp/none.so $MEMSIM record --fake \
	--device h100-80gb -o "$tmp/c.csv" -- "$PY" a.py) >"$tmp/out" 2>&1 ||
	fail "record without the library: $(tail -3 "$tmp/out")"
l1=$(sed -n 1p "$tmp/out")
[ "$l1" = "283115520 283115520 283115520 0 0 0 True" ] ||
	fail "a.py without the library: '$l1'"
grep -q "allocator-model:absent" "$tmp/out" ||
	fail "no allocator-model:absent assumption: $(tail -1 "$tmp/out")"
finish recorder_allocator_model.sh
