#!/bin/sh
# memsim record --fake: a script that raises after values the recording
# assumed (here `(x > 0).any()` on the GPU, item:bool, answered False)
# writes no trace and, after the script's own traceback, says how many
# values it ran on that were assumed, by kind, and the last of them, and
# names --values cpu, which computes them (the script then records).  A
# script that raises before any such value gets no note, nor does one
# under --values cpu.  Needs Python 3 and PyTorch; skips (77) without
# them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
torch.manual_seed(0)
x = torch.randn(1000, device="cuda")
if not (x > 0).any():
    raise RuntimeError("no positive sample")
print("recorded")
PY
cat >"$tmp/b.py" <<'PY'
import torch
x = torch.randn(1000, device="cuda")
raise RuntimeError("before any value")
PY
(cd "$tmp" && $MEMSIM record --fake -o a.csv -- "$PY" a.py) >"$tmp/out" \
	2>"$tmp/err" && fail "a.py recorded under --values rules"
[ -e "$tmp/a.csv" ] && fail "a.py: a trace written"
grep -q 'RuntimeError: no positive sample' "$tmp/err" ||
	fail "a.py: no traceback: $(cat "$tmp/err")"
grep -qx "memsim record: note: the script ran on 1 value the recording \
assumed (item:bool 1; the last: item:bool a.py:4 =False); if its error \
comes of one, --values cpu computes every value on the CPU instead \
(slower; docs/recording-values.md)" "$tmp/err" ||
	fail "a.py: the note: $(tail -1 "$tmp/err")"
(cd "$tmp" && $MEMSIM record --fake --values cpu -o a.csv -- "$PY" a.py) \
	>"$tmp/out" 2>"$tmp/err" || fail "a.py --values cpu: $(tail -3 "$tmp/err")"
# (the script's output goes to stderr, memsim record's stdout its own)
grep -qx recorded "$tmp/err" || fail "a.py --values cpu: $(cat "$tmp/err")"
(cd "$tmp" && $MEMSIM record --fake -o b.csv -- "$PY" b.py) >"$tmp/out" \
	2>"$tmp/err" && fail "b.py recorded"
grep -q 'RuntimeError: before any value' "$tmp/err" ||
	fail "b.py: no traceback: $(cat "$tmp/err")"
grep -q "note:" "$tmp/err" && fail "b.py: a note: $(grep note: "$tmp/err")"
finish recorder_failure_note.sh
