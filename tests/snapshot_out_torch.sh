#!/bin/sh
# A snapshot written by memsim run --snapshot-out opens in PyTorch's
# memory_viz (torch.cuda._memory_viz, the CPU build): its summaries run,
# and its segments, blocks and trace give the figures memsim run --json
# gave for the same run.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
DATA=${MSIM_TESTDATA:-tests/data}
for f in pickles/resnet50_amp.frames.pickle snapshots/r2_13_oom.pickle \
	snapshots/h200_expandable.pickle; do
	$MEMSIM run --json --snapshot-out "$tmp/s.pickle" "$DATA/$f" >"$tmp/s.json" ||
		{ fail "$f: run --snapshot-out"; continue; }
	"$PY" - "$tmp/s.pickle" "$tmp/s.json" >"$tmp/py.out" 2>&1 <<'PYEOF' ||
import json
import pickle
import sys

from torch.cuda import _memory_viz as mv

snap = pickle.load(open(sys.argv[1], "rb"))
fig = json.load(open(sys.argv[2]))
plain = lambda text: text  # no flamegraph.pl download
mv.segsum(snap)
mv.trace(snap)
mv.memory(snap, format_flamegraph=plain)
mv.segments(snap, format_flamegraph=plain)
bad = []
def check(what, got, want):
    if got != want:
        bad.append("%s: %d in the snapshot, %d from memsim run" % (what, got, want))
segs = snap["segments"]
check("reserved now", sum(g["total_size"] for g in segs),
      fig["reserved_bytes.all.current"])
check("allocated now", sum(b["size"] for g in segs for b in g["blocks"]
                           if b["state"] == "active_allocated"),
      fig["allocated_bytes.all.current"])
for g in segs:
    check("blocks of the segment at %d" % g["address"],
          sum(b["size"] for b in g["blocks"]), g["total_size"])
cur = peak = 0
allocs = ooms = 0
for e in snap["device_traces"][0]:
    a = e["action"]
    cur += e["size"] if a in ("segment_alloc", "segment_map") else \
        -e["size"] if a in ("segment_free", "segment_unmap") else 0
    peak = max(peak, cur)
    allocs += a == "alloc"
    ooms += a == "oom"
check("peak reserved", peak, fig["reserved_bytes.all.peak"])
check("allocs", allocs, fig["allocation.all.allocated"])
check("ooms", ooms, fig["num_ooms"])
print("\n".join(bad) if bad else "ok")
sys.exit(1 if bad else 0)
PYEOF
		fail "$f: $(cat "$tmp/py.out")"
done
# At the peak: the segments then hold the peak reserved bytes.
$MEMSIM run --json --snapshot-out "$tmp/p.pickle" --snapshot-at peak \
	"$DATA/pickles/gpt2_fp32.pickle" >"$tmp/p.json" || fail "run (peak)"
"$PY" -c '
import json, pickle, sys
from torch.cuda import _memory_viz as mv
d = pickle.load(open(sys.argv[1], "rb"))
f = json.load(open(sys.argv[2]))
mv.segsum(d)
sys.exit(0 if sum(g["total_size"] for g in d["segments"]) ==
         f["reserved_bytes.all.peak"] else 1)
' "$tmp/p.pickle" "$tmp/p.json" || fail "--snapshot-at peak: not the peak"
# The recording's frames are the allocations' frames.
"$PY" -c '
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
fr = [e["frames"][0] for e in d["device_traces"][0] if e["frames"]]
sys.exit(0 if fr and all({"filename", "line", "name"} <= set(f) for f in fr) else 1)
' "$tmp/s.pickle" 2>/dev/null && fail "h200_expandable has no frames, the output should not"
$MEMSIM run --snapshot-out "$tmp/f.pickle" "$DATA/pickles/resnet50_amp.frames.pickle" >/dev/null ||
	fail "run (frames)"
"$PY" -c '
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
fr = [e["frames"][0] for e in d["device_traces"][0] if e["frames"]]
sys.exit(0 if len(fr) > 1000 and fr[0]["filename"].endswith(".py") else 1)
' "$tmp/f.pickle" || fail "the recording's frames are not in the output"
finish snapshot_out_torch
