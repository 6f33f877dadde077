#!/bin/sh
# memsim record --fake writes an `empty_cache` row where the program calls
# torch.cuda.empty_cache() or torch.cuda.memory.empty_cache(), in order
# with the allocations and frees around it, and the replay frees the cached
# segments there (release_cached_blocks, docs/pytorch-allocator.md §6.2).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
MiB=1048576

cat >"$tmp/ec.py" <<'PY'
import torch
a = torch.empty(10 << 20, dtype=torch.uint8, device="cuda")
b = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
del a
torch.cuda.empty_cache()
c = torch.empty(16 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.memory.empty_cache()
del b
PY
$MEMSIM record -o "$tmp/ec.csv" -- "$PY" "$tmp/ec.py" 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, 'NR > 1 && NR <= 8 { printf "%s:%s ", $3, $5 }' "$tmp/ec.csv")
want="alloc:$((10 * MiB)) alloc:$((8 * MiB)) free_completed:$((10 * MiB)) empty_cache:0 alloc:$((16 * MiB)) empty_cache:0 free_completed:$((8 * MiB)) "
[ "$got" = "$want" ] || fail "rows: $got, want $want"
# 10 MiB (its own 10 MiB segment) and 8 MiB (a 20 MiB one); the first call
# frees the 10 MiB segment; 16 MiB fits in no free piece (12 MiB) and
# takes a new segment: peak 36 MiB; the second call frees nothing (both
# live).  Without the calls the 10 MiB segment stays: 46 MiB.
$MEMSIM run --json "$tmp/ec.csv" >"$tmp/o.json" || fail "run"
got="$(key reserved_bytes.all.peak "$tmp/o.json") $(key segment.all.freed "$tmp/o.json") $(key num_sync_all_streams "$tmp/o.json")"
[ "$got" = "$((36 * MiB)) 1 2" ] || fail "replay: $got"
grep -v ',empty_cache,' "$tmp/ec.csv" >"$tmp/none.csv"
$MEMSIM run --json "$tmp/none.csv" >"$tmp/o.json" || fail "run without rows"
[ "$(key reserved_bytes.all.peak "$tmp/o.json")" = $((46 * MiB)) ] || fail "replay without rows"
finish recorder_empty_cache.sh
