#!/bin/sh
# torch.randperm on the GPU (randperm_out_cuda, Randperm.cu): after the
# result, the arange it sorts (the result's dtype), random keys of
# min(64, ceil(log2(n - (6 n^2 + 1) / (12 log 0.9)))) bits (int32 up to
# 32 bits, else int64) and their sorted copy, then cub's radix_sort_pairs
# storage, freed as the sort returns, keys_tmp and keys as their scope
# ends, the arange on return.  The recorder made the result alone:
# rtdl_revisiting_models' example (delu.iter_batches shuffles with
# torch.randperm(n, device=x.device) every epoch) left out 3.5 n * 8
# bytes and cub's storage an epoch.  Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/rp.py" <<'PY'
import torch
a = torch.randperm(13209, device="cuda")                   # 30 bits: int32 keys
b = torch.randperm(100000, device="cuda")                  # 36 bits: int64 keys
c = torch.randperm(20, device="cuda")                      # one cub tile
d = torch.randperm(13209, device="cuda", dtype=torch.int32)
PY
$MEMSIM record --fake -o "$tmp/rp.csv" -- "$PY" "$tmp/rp.py" \
	>/dev/null 2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# every request in order: +SIZE for an alloc, -SIZE for a free
awk -F, 'NR > 1 && $3 == "alloc" { s = s " +" $5; sz[$4] = $5 }
	NR > 1 && $3 == "free_completed" { s = s " -" sz[$4] }
	END { print substr(s, 2) }' "$tmp/rp.csv" >"$tmp/seq"
# cub's storage (kernels._cub_radix_temp): 4 passes of 8 bits, the
# alternate keys and values, 3 look-back tiles of 1 KiB, 4 histograms of
# 256 8-byte counts, 256 bytes and 255 of slack
c1=$(( 52992 + 105728 + 3072 + 8192 + 256 + 255 ))
c2=$(( 800000 + 800000 + 19 * 1024 + 5 * 2048 + 256 + 255 ))
c4=$(( 52992 + 52992 + 3072 + 8192 + 256 + 255 ))
want="+105672 +105672 +52836 +52836 +$c1 -$c1 -52836 -52836 -105672"
want="$want +800000 +800000 +800000 +800000 +$c2 -$c2 -800000 -800000 -800000"
want="$want +160 +160 +80 +80 +1 -1 -80 -80 -160"
want="$want +52836 +52836 +52836 +52836 +$c4 -$c4 -52836 -52836 -52836"
[ "$(cat "$tmp/seq")" = "$want" ] ||
	fail "requests '$(cat "$tmp/seq")', not '$want'"
finish recorder_randperm.sh
