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
# blocks from before it, which keep the category "before history": the
# 2 MiB one live in the snapshot with the site of its frames, the two
# the history frees (4 MiB, 400 B in a 512 B block) with none.
$MEMSIM explain "$DATA/r2_11_late.pickle" >"$tmp/frames.txt" || fail "explain r2_11_late"
grep -q "^        4.00 MiB      2 x  before history (no site)$" "$tmp/frames.txt" ||
	fail "r2_11_late sites: $(cat "$tmp/frames.txt")"
grep -q "^        2.00 MiB      1 x  before history train.py:12 step$" "$tmp/frames.txt" ||
	fail "r2_11_late: the snapshot block's site: $(cat "$tmp/frames.txt")"
grep -q "^        1.00 KiB      1 x  input      train.py:10 step$" "$tmp/frames.txt" ||
	fail "r2_11_late: the history's site: $(cat "$tmp/frames.txt")"

# r2_11_blockframes (make_blockframes.py): before the history, A 4 MiB
# and B 2 MiB from model.py:20 build (one shared frames list, below an
# installed torch's Module._apply and a C++ frame), C 3 MiB with frames
# [] and F 5 MiB, freed by the history: no site.  At the start (peak
# reserved, 20 MiB) 14 MiB all from before; E (2 MiB, train.py:30 step)
# makes the allocated peak, 16 MiB.
$MEMSIM explain --json "$DATA/r2_11_blockframes.pickle" >"$tmp/bf.json" ||
	fail "explain --json r2_11_blockframes"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
MiB = 1 << 20
p, q = d["peak"], d["peak_allocated"]
assert p["all"]["reserved"] == 20 * MiB and p["all"]["allocated"] == 14 * MiB, p
assert p["before_history"] == {"bytes": 14 * MiB, "blocks": 4}, p
before = [{"site": "", "category": "before history", "bytes": 8 * MiB, "blocks": 2},
          {"site": "model.py:20 build", "category": "before history",
           "bytes": 6 * MiB, "blocks": 2}]
assert p["sites"] == before and p["sites_live"] == 2, p
assert q["all"]["allocated"] == 16 * MiB, q
assert q["sites"] == before + [{"site": "train.py:30 step", "category": "input",
                               "bytes": 2 * MiB, "blocks": 1}], q
assert d["tagged"], d' "$tmp/bf.json" || fail "r2_11_blockframes: $(cat "$tmp/bf.json")"
$MEMSIM explain "$DATA/r2_11_blockframes.pickle" >"$tmp/bf.txt" ||
	fail "explain r2_11_blockframes"
grep -q "^        6.00 MiB      2 x  before history model.py:20 build$" "$tmp/bf.txt" ||
	fail "r2_11_blockframes: $(cat "$tmp/bf.txt")"
# convert: csv carries the seeded blocks' site (no category), bin no
# tags; the blocks live at the reset_peaks row that ends the seeded start
# are the ones from before the history, so csv explains as the snapshot.
for ext in csv bin; do
	$MEMSIM convert "$DATA/r2_11_blockframes.pickle" "$tmp/bf.$ext" >/dev/null ||
		fail "convert r2_11_blockframes to $ext"
	$MEMSIM explain --json "$tmp/bf.$ext" >"$tmp/bf.$ext.json" || fail "explain bf.$ext"
done
[ "$(grep -c ',alloc,[0-9]*,[0-9]*,0,,model.py:20 build$' "$tmp/bf.csv")" = 2 ] ||
	fail "r2_11_blockframes.csv: $(cat "$tmp/bf.csv")"
python3 -c 'import json,sys; d, c, b = (json.load(open(f)) for f in sys.argv[1:])
for k in ("peak", "peak_allocated"):
    for f in ("all", "before_history", "sites", "categories"):
        assert c[k][f] == d[k][f], (k, f, c[k][f], d[k][f])
    assert b[k]["before_history"] == d[k]["before_history"], (k, b[k])
assert not b["tagged"] and b["peak"]["categories"] == d["peak"]["categories"], b' \
	"$tmp/bf.json" "$tmp/bf.csv.json" "$tmp/bf.bin.json" ||
	fail "r2_11_blockframes converted: $(cat "$tmp/bf.csv.json" "$tmp/bf.bin.json")"

# A complete history has none from before it.
$MEMSIM explain --json "$DATA/r2_11_full.pickle" >"$tmp/full.json" || fail "explain r2_11_full"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["peak"]["before_history"] == {"bytes": 0, "blocks": 0}, d["peak"]' "$tmp/full.json" ||
	fail "r2_11_full: $(cat "$tmp/full.json")"
finish explain_partial
