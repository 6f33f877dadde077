#!/bin/sh
# explain on a partial history (snapshots recorded after the program began,
# tests/data/snapshots): the peaks count from the history's start, after
# the seeding that rebuilds it (never inside it, where fillers made
# allocated equal reserved); the moment allocated bytes peak is explained
# as well as that of reserved; the blocks live before the history are
# named so, not "untagged", and apart from what the history allocated.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
DATA=${MSIM_TESTDATA:-tests/data}/snapshots

# h200_late (H200, torch 2.11, no frames): reserved peaks at the start,
# 1247805440 bytes of which 269606912 allocated, all 27 blocks from before
# the history; allocated peaks later, at 1158804992, 27 blocks from
# before and 15 the history allocated.
$MEMSIM explain --json "$DATA/h200_late.pickle" >"$tmp/late.json" ||
	fail "explain --json h200_late"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
p, q = d["peak"], d["peak_allocated"]
assert p["request"] == 91 and p["all"]["reserved"] == 1247805440, p
assert p["all"]["allocated"] == 269606912, p
assert p["before_history"] == {"bytes": 269606912, "blocks": 27}, p
assert q["request"] == 120 and q["all"]["allocated"] == 1158804992, q
assert q["before_history"] == {"bytes": 269606912, "blocks": 27}, q
assert q["categories"]["untagged"]["blocks"] == 42, q' "$tmp/late.json" ||
	fail "h200_late: $(cat "$tmp/late.json")"
$MEMSIM explain "$DATA/h200_late.pickle" >"$tmp/late.txt" || fail "explain h200_late"
grep -q "^At peak allocated, 1.08 GiB (1158804992 bytes), after 120 requests:" "$tmp/late.txt" ||
	fail "no peak allocated: $(cat "$tmp/late.txt")"
grep -q "^    before history 257.12 MiB 100.00%       27 blocks$" "$tmp/late.txt" ||
	fail "peak reserved not said to be from before the history: $(cat "$tmp/late.txt")"
grep -q "^    untagged       848.01 MiB  76.73%       15 blocks$" "$tmp/late.txt" ||
	fail "the history's own blocks: $(cat "$tmp/late.txt")"
grep -q "untagged .*100.00%" "$tmp/late.txt" && fail "100% untagged"

# r2_11_late (frames): the history's block has its site beside the
# blocks from before it.
$MEMSIM explain "$DATA/r2_11_late.pickle" >"$tmp/frames.txt" || fail "explain r2_11_late"
grep -q "^        6.00 MiB      3 x  untagged   (no site; 3 of them from before the history)$" "$tmp/frames.txt" ||
	fail "r2_11_late sites: $(cat "$tmp/frames.txt")"
grep -q "^        1.00 KiB      1 x  input      train.py:10 step$" "$tmp/frames.txt" ||
	fail "r2_11_late: the history's site: $(cat "$tmp/frames.txt")"

# A complete history has none from before it.
$MEMSIM explain --json "$DATA/r2_11_full.pickle" >"$tmp/full.json" || fail "explain r2_11_full"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["peak"]["before_history"] == {"bytes": 0, "blocks": 0}, d["peak"]' "$tmp/full.json" ||
	fail "r2_11_full: $(cat "$tmp/full.json")"
finish explain_partial
