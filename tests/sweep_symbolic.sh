#!/bin/sh
# memsim sweep --symbolic NAME over a command (docs/symbolic-sizes.md):
# the {B} of the grid recorded twice with --symbolic, every value where
# both agree instantiated instead of recorded, the rest recorded one by
# one; the database's rows the same as a sweep without --symbolic (the
# instantiated ones told by their run_meta trace_origin); a refused
# symbolic recording falls back to recording every value, saying why; bad
# uses are one line.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
MEMSIM=$(cd "$(dirname "$MEMSIM")" && pwd)/$(basename "$MEMSIM")

# A forward pass whose sizes are B times a row: no rule of the recorder
# branches on B, so the symbolic trace holds for 2..MAX.
cat >"$tmp/lin.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
m = torch.nn.Linear(64, 256, bias=False).cuda()
x = torch.randn(B, 64, device="cuda")
y = torch.relu(m(x)) * 2
PY
# B as a plain int where a size is asked: --symbolic is refused (exit 3).
cat >"$tmp/pin.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
x = torch.empty(B * 4, device="cuda")
y = x.view(B, 4).t().contiguous()
PY

# sweep DIR SCRIPT [--symbolic B]: B over 1..12 (1: PyTorch specializes
# it, recorded) by two allocator settings, into DIR/runs.db (run from
# DIR: the rows' trace paths are the same in both folders).
sweep() {
	d=$1 script=$2
	shift 2
	mkdir -p "$tmp/$d"
	(cd "$tmp/$d" && $MEMSIM sweep -j1 --db runs.db "$@" \
		--grid B=1,2,3,5,8,12 --grid expandable_segments=false,true \
		-- "$PY" "$script" '{B}' >out 2>err) ||
		fail "sweep $d: $(tail -3 "$tmp/$d/err")"
}
# rows DIR: every stored figure of every run but its id, time and wall
# clock, by setting key: runs, packed statistics, timeline, segment events,
# blocks at peak, and run_meta (trace_origin apart), as text.
rows() {
	"$PY" - "$tmp/$1/runs.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cols = [c[1] for c in db.execute("PRAGMA table_info(runs)")
        if c[1] not in ("id", "created", "wall_ms")]
for row in db.execute("SELECT id, %s FROM runs ORDER BY setting_key"
                      % ", ".join(cols)):
    rid = row[0]
    print(dict(zip(cols, row[1:])))
    for t in ("stats", "timeline", "segment_events", "peak_blocks"):
        print(t, db.execute("SELECT data FROM %s_packed WHERE run_id=?" % t,
                            (rid,)).fetchall())
    print(db.execute("SELECT key, value FROM run_meta WHERE run_id=? AND"
                     " key != 'trace_origin' ORDER BY key",
                     (rid,)).fetchall())
PY
}
# origins DIR: "B=N origin" of each run with a trace_origin.
origins() {
	"$PY" - "$tmp/$1/runs.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for s, v in db.execute("SELECT r.strategy, m.value FROM runs r JOIN run_meta"
                       " m ON m.run_id = r.id AND m.key = 'trace_origin'"
                       " ORDER BY r.setting_key"):
    print(s, v)
PY
}

sweep plain "$tmp/lin.py"
sweep sym "$tmp/lin.py" --symbolic B
grep -q '^sweep 1: 12 settings: 12 run' "$tmp/sym/out" ||
	fail "sweep --symbolic: $(cat "$tmp/sym/out")"
# recorded symbolic at 5 (the middle of 2..12) and 6; holds for 2..12
grep -q '^memsim sweep: symbolic: B=2\.\.12 instantiated from one symbolic recording (runs\.db\.recordings/symbolic-B=5-[0-9a-f]*\.csv; recorded at 5 and 6, the same trace); values outside it recorded one by one$' \
	"$tmp/sym/err" || fail "no symbolic line: $(grep symbolic "$tmp/sym/err")"
for r in "1/6 (B=1): recording..." "2/6 (B=2): instantiated from the symbolic recording" \
	"6/6 (B=12): instantiated from the symbolic recording"; do
	grep -qF "memsim sweep: recording $r" "$tmp/sym/err" ||
		fail "no progress line '$r': $(grep recording "$tmp/sym/err")"
done
grep -qx 'memsim sweep: symbolic: 5 of 6 recordings instantiated (2 made with --symbolic)' \
	"$tmp/sym/err" || fail "no count: $(tail -2 "$tmp/sym/err")"
rows plain >"$tmp/plain.rows"
rows sym >"$tmp/sym.rows"
[ "$(grep -c '^{' "$tmp/plain.rows")" -eq 12 ] || fail "plain: not 12 rows"
cmp -s "$tmp/plain.rows" "$tmp/sym.rows" ||
	fail "the rows differ: $(diff "$tmp/plain.rows" "$tmp/sym.rows" | head -c 600)"
# each instantiated trace is the recording's bytes
for f in "$tmp/plain/runs.db.recordings"/B=*; do
	cmp -s "$f" "$tmp/sym/runs.db.recordings/$(basename "$f")" ||
		fail "$(basename "$f") differs from its recording"
done
origins plain >"$tmp/plain.orig"
[ ! -s "$tmp/plain.orig" ] || fail "plain sweep with origins: $(cat "$tmp/plain.orig")"
origins sym >"$tmp/sym.orig"
[ "$(wc -l <"$tmp/sym.orig")" -eq 10 ] || fail "origins: $(cat "$tmp/sym.orig")"
grep -q '^record:B=8 instantiated at B=8 from runs\.db\.recordings/symbolic-B=5-[0-9a-f]*\.csv, which holds for B=2\.\.12 (recorded at 5 and 6, the same trace)$' \
	"$tmp/sym.orig" || fail "B=8's origin: $(cat "$tmp/sym.orig")"
! grep -q '^record:B=1 ' "$tmp/sym.orig" || fail "B=1 has an origin"
# Run again with another allocator setting: the files are reused, nothing
# recorded, and the new runs of the instantiated ones say so too.
sweep sym "$tmp/lin.py" --symbolic B --grid garbage_collection_threshold=0.5
grep -q '^sweep 2: 12 settings: 12 run' "$tmp/sym/out" ||
	fail "sweep again: $(cat "$tmp/sym/out")"
grep -qF "memsim sweep: recording 2/6 (B=2): instantiated before, reused" \
	"$tmp/sym/err" || fail "no reuse line: $(grep 2/6 "$tmp/sym/err")"
! grep -q " symbolic$\|recording\.\.\.$" "$tmp/sym/err" ||
	fail "recorded again: $(cat "$tmp/sym/err")"
origins sym >"$tmp/sym.orig"
[ "$(wc -l <"$tmp/sym.orig")" -eq 20 ] || fail "origins again: $(cat "$tmp/sym.orig")"

# A refused symbolic recording: said, and every value recorded.
sweep pinplain "$tmp/pin.py"
sweep pinsym "$tmp/pin.py" --symbolic B
grep -q '^memsim sweep: symbolic: not used: recording B=5 with --symbolic was refused (exit 3); every value is recorded$' \
	"$tmp/pinsym/err" || fail "refusal: $(grep symbolic "$tmp/pinsym/err")"
grep -qx 'memsim sweep: symbolic: 0 of 6 recordings instantiated (1 made with --symbolic)' \
	"$tmp/pinsym/err" || fail "refusal count: $(tail -2 "$tmp/pinsym/err")"
rows pinplain >"$tmp/pinplain.rows"
rows pinsym >"$tmp/pinsym.rows"
cmp -s "$tmp/pinplain.rows" "$tmp/pinsym.rows" || fail "refused: the rows differ"

# Bad uses: one line each.
expect_error "no {C} with a --grid C=" $MEMSIM sweep --db "$tmp/x.db" \
	--symbolic C --grid B=2,3 -- "$PY" "$tmp/lin.py" '{B}'
expect_error "one name at a time (B and S given)" $MEMSIM sweep \
	--db "$tmp/x.db" --symbolic B --symbolic S --grid B=2,3 \
	-- "$PY" "$tmp/lin.py" '{B}'
expect_error "'4x' is not a whole number" $MEMSIM sweep --db "$tmp/x.db" \
	--symbolic B --grid B=2,4x -- "$PY" "$tmp/lin.py" '{B}'
expect_error "only over a command" $MEMSIM sweep --db "$tmp/x.db" \
	--symbolic B "$tmp/x.csv"
[ ! -e "$tmp/x.db" ] || fail "a refused sweep made its database"
finish sweep_symbolic
