#!/bin/sh
# memsim record --fake on generation idioms (tests/recorder/fresh3_beam.py):
# a beam search whose stopping test compares scores with transformers'
# -1e9 "no finished beam" sentinel runs every step to the max length
# (traces/memsim_record/known.py, assumption compare:sentinel), and a cache
# grown from torch.tensor([]) under torch.inference_mode records (it used
# to fail: the fake mode ran aten::to on a real GPU).  Needs Python 3 and
# PyTorch; skips (77) without them.  No transformers: the loops are
# written here as transformers writes them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

$MEMSIM record -o "$tmp/b.csv" -- "$PY" "$SRC/recorder/fresh3_beam.py" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
grep '^steps\|^keys' "$tmp/err" >"$tmp/out"
printf 'steps 6 shape (8, 16)\nsteps 4 shape (12, 24)\nkeys (3072,)\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "steps: $(cat "$tmp/out")"
# One sentinel comparison a step (best > worst, worst the known -1e9 of
# where(finished known False, ..., -1e9)), nothing else assumed.
grep -q "; 10 assumptions (compare:sentinel 10)$" "$tmp/err" ||
	fail "assumptions: $(cat "$tmp/err")"
# Each step at line 37: the gathered beams ids[src] (B*4 x len longs),
# the new tokens idx % 1000 (B x 4 longs) and their cat (len + 1):
# 8 x 10..15 x 8 bytes, then 12 x 20..23 x 8.
got=$(awk -F, '$3 == "alloc" && $8 == "fresh3_beam.py:37 beam_search" { printf "%s ", $5 }' "$tmp/b.csv")
want=
for l in 10 11 12 13 14 15; do want="$want$((8 * l * 8)) 64 $((8 * (l + 1) * 8)) "; done
for l in 20 21 22 23; do want="$want$((12 * l * 8)) 96 $((12 * (l + 1) * 8)) "; done
[ "$got" = "$want" ] || fail "beam sizes: $got, want $want"
# torch.tensor([]) allocates nothing; three cats of 1024 halves: 2048,
# 4096 and 6144 bytes, each after its torch.ones (2048).
got=$(awk -F, '$3 == "alloc" && $8 == "fresh3_beam.py:66 <module>" { printf "%s ", $5 }' "$tmp/b.csv")
[ "$got" = "2048 2048 2048 4096 2048 6144 " ] || fail "inference-mode cache: $got"
$MEMSIM run "$tmp/b.csv" >/dev/null || fail "memsim run of the recording"

finish fresh3_record.sh
