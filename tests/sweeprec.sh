#!/bin/sh
# memsim sweep over a recording command (memsim sweep --grid ... --
# python3 SCRIPT {batch}): each recording made once, every allocator
# setting replaying it, the rows named by what made the recording; a failed
# recording; and memsim fit leaving no scratch folder behind.  Needs Python
# 3 and PyTorch (CI installs the CPU build); skips (77) without them.  The
# model is defined here; no downloaded weights.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

# 8 pre-norm residual blocks over sequences of 1024 tokens: activations grow
# with the batch, and checkpointing the blocks (one Sequential of one
# module type) drops most of them.
cat >"$tmp/blocks.py" <<'PY'
import sys
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(self.norm(x))))

batch = int(sys.argv[1])
model = nn.Sequential(nn.Sequential(*[Block(256) for _ in range(8)]),
                      nn.Linear(256, 10)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(2):
    tokens = torch.randn(batch, 1024, 256, device="cuda")
    labels = torch.randint(0, 10, (batch * 1024,), device="cuda")
    logits = model(tokens).reshape(-1, 10)
    nn.functional.cross_entropy(logits, labels).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
sys.exit(3 if batch == 3 else 0)
PY

db=$tmp/runs.db
$MEMSIM sweep -j2 --db "$db" --grid batch=2,4 checkpoint=none,sqrt \
	--grid expandable_segments=false,true -- "$PY" "$tmp/blocks.py" '{batch}' \
	>"$tmp/out" 2>"$tmp/err" || fail "sweep: $(tail -3 "$tmp/err")"
grep -q '^sweep 1: 8 settings: 8 run' "$tmp/out" || fail "sweep: $(cat "$tmp/out")"
# Progress names each recording as it is made.
for r in "1/4 (batch=2,checkpoint=none)" "4/4 (batch=4,checkpoint=sqrt)"; do
	grep -qF "memsim sweep: recording $r: recording" "$tmp/err" ||
		fail "no progress line for $r: $(cat "$tmp/err")"
done
# Four recordings kept beside the database.
n=$(ls "$db.recordings" | wc -l)
[ "$n" -eq 4 ] || fail "$n recordings in $db.recordings, expected 4"

# The rows: batch x checkpoint x alloc-conf, named by the recording.
$MEMSIM report --db "$db" --csv >"$tmp/report.csv" || fail "report"
"$PY" - "$tmp/report.csv" >"$tmp/check" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("rows", len(rows))
peak = {}
for r in rows:
    peak[(r["strategy"], r["params"])] = int(r["peak_allocated_bytes"])
print("keys", len(peak))
def p(b, c, conf):
    return peak.get(("record:batch=%d,checkpoint=%s" % (b, c), conf))
for conf in ("", "expandable_segments:True"):
    for c in ("none", "sqrt"):
        if p(2, c, conf) is None or p(4, c, conf) is None:
            print("missing", c, conf)
        elif not p(4, c, conf) > p(2, c, conf):
            print("batch", c, conf, p(2, c, conf), p(4, c, conf))
    for b in (2, 4):
        if p(b, "none", conf) is None or p(b, "sqrt", conf) is None:
            print("missing", b, conf)
        elif not p(b, "sqrt", conf) < p(b, "none", conf):
            print("sqrt", b, conf, p(b, "none", conf), p(b, "sqrt", conf))
PY
grep -qx 'rows 8' "$tmp/check" || fail "report rows: $(cat "$tmp/check")"
grep -qx 'keys 8' "$tmp/check" || fail "rows not told apart: $(cat "$tmp/check")"
grep -q '^batch' "$tmp/check" && fail "larger batch, peak not larger: $(cat "$tmp/check")"
grep -q '^sqrt' "$tmp/check" && fail "sqrt checkpointing, peak not lower: $(cat "$tmp/check")"
grep -q '^missing' "$tmp/check" && fail "rows missing: $(cat "$tmp/check")"
# The table view shows what made each recording.
$MEMSIM report --db "$db" | grep -q 'record:batch=4,checkpoint=sqrt' ||
	fail "report does not show the recording's names"

# Run again: nothing recorded again, nothing run again.
$MEMSIM sweep -j2 --db "$db" --grid batch=2,4 checkpoint=none,sqrt \
	--grid expandable_segments=false,true -- "$PY" "$tmp/blocks.py" '{batch}' \
	>"$tmp/out" 2>"$tmp/err" || fail "sweep again: $(tail -3 "$tmp/err")"
grep -q '8 already stored' "$tmp/out" || fail "sweep again: $(cat "$tmp/out")"
n=$(grep -c 'made before, reused' "$tmp/err")
[ "$n" -eq 4 ] || fail "sweep again: $n of 4 recordings reused: $(cat "$tmp/err")"

# A recording that fails (the script exits 3 at batch 3): one line naming
# it, exit 1, the other recording's rows stored, the earlier rows kept.
$MEMSIM sweep -q -j1 --db "$db" --grid batch=2,3 -- "$PY" "$tmp/blocks.py" \
	'{batch}' >"$tmp/out" 2>"$tmp/err" && fail "a failed recording exits 0"
n=$(grep -c '^memsim sweep: recording batch=3 failed' "$tmp/err")
[ "$n" -eq 1 ] || fail "failed recording: $(cat "$tmp/err")"
n=$($MEMSIM report --db "$db" --csv | grep -c 'record:batch=')
[ "$n" -eq 9 ] || fail "$n rows after the failed recording, expected 9"
# Bad input: one line naming what is wrong.
$MEMSIM sweep --db "$db" --grid batch=2 -- "$PY" "$tmp/blocks.py" '{bs}' \
	2>"$tmp/err" && fail "an unknown {bs} accepted"
grep -q '{bs}' "$tmp/err" || fail "unknown {bs}: $(cat "$tmp/err")"
$MEMSIM sweep --db "$db" --grid batch=2 x.csv -- "$PY" "$tmp/blocks.py" \
	'{batch}' 2>"$tmp/err" && fail "a trace with a command accepted"
grep -q "'x.csv'" "$tmp/err" || fail "trace and command: $(cat "$tmp/err")"

# --list without a database records into a scratch folder, then removes it.
$MEMSIM sweep --list --grid batch=2 -- "$PY" "$tmp/blocks.py" '{batch}' \
	>"$tmp/list" 2>/dev/null || fail "sweep --list"
grep -q 'record:batch=2' "$tmp/list" || fail "sweep --list: $(cat "$tmp/list")"

# memsim fit: its scratch folder goes on every way out, a failed recording
# (batch 3: a failure at that value, counted as not fitting, the search
# goes on) and a missing trace included.
$MEMSIM fit --cap 64GiB --vary batch=2..3 -- "$PY" "$tmp/blocks.py" '{batch}' \
	>"$tmp/fit" 2>"$tmp/err" || fail "fit over a failing recording: $(cat "$tmp/err")"
grep -q 'recording batch=3 failed' "$tmp/err" || fail "fit: $(cat "$tmp/err")"
grep -q '^largest *batch=2' "$tmp/fit" || fail "fit: $(cat "$tmp/fit")"
$MEMSIM fit --cap 64GiB --vary batch=1..2 -c expandable_segments:True -- \
	"$PY" "$tmp/blocks.py" '{batch}' >"$tmp/fit" 2>/dev/null ||
	fail "fit: $(cat "$tmp/fit")"
grep -q '^largest *batch=2' "$tmp/fit" || fail "fit: $(cat "$tmp/fit")"
# (PyTorch keeps its own torchinductor_USER there.)
left=$(ls -A "$TMPDIR" | grep '^memsim-')
[ -z "$left" ] || fail "scratch left in TMPDIR: $left"

finish sweeprec.sh
