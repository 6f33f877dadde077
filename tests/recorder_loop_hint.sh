#!/bin/sh
# memsim record --fake: the progress line (every 10 s on stderr) names
# the program's line asked most often once it passes 1000 asks, with the
# assumption's answer and the ways out (--item-bool, --values cpu): a
# loop on values the recording does not have (torchdiffeq's adaptive
# solvers reject every step, about a hundred asks a second) shows there
# within seconds, where --item-repeats (100000) stops it only after
# many minutes.  The program here asks for 16 s and ends by itself.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import time
import torch
x = torch.randn(8, device="cuda")
t0 = time.monotonic()
while time.monotonic() - t0 < 16:
    if x.abs().max() <= 1:
        pass
print("done")
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "^done$" "$tmp/out" || fail "the program did not end: $(cat "$tmp/out")"
grep -q "; a.py:6 <module> asked [0-9]* times (item:bool, answered False): a loop on values the recording does not have? bound it, or give the answer with --item-bool true, or record with --values cpu$" "$tmp/out" ||
	fail "no hint on the progress line: $(cat "$tmp/out")"
finish recorder_loop_hint.sh
