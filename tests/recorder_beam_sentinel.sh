#!/bin/sh
# memsim record --fake on transformers 5's beam search bookkeeping
# (tests/recorder/beam_finish.py): a score of unknown value plus a known
# -1e9 penalty ranks below every plain score in a topk (values.py's
# sentinel classes, Values._classes / _unsentinel; the compare:sentinel
# assumption of known.py), so the last step's merged topk takes the beams
# that just finished, as on a GPU, not the -1e9 placeholders of the
# uniform routing (accelerate's phi2.py with num_beams=4 decoded token
# id -1 and stopped: "OverflowError: number too small to fit in target
# type"; llama-recipes' torch_compile.py returned the prompt alone).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

$MEMSIM record -o "$tmp/b.csv" -- "$PY" "$SRC/recorder/beam_finish.py" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
grep -q '^generated \[9, 9\] of 9$' "$tmp/err" ||
	fail "finished beams: $(grep '^generated' "$tmp/err")"
# The first step chooses among beam 0's 50 tokens (beams 1 and 2 start at
# -1e9): beam index 0 in every choice.
grep -q '^first \[\[0, 0, 0, 0, 0, 0\], \[0, 0, 0, 0, 0, 0\]\]$' "$tmp/err" ||
	fail "first step: $(grep '^first' "$tmp/err")"
# The same answers as the CPU's values.
$MEMSIM record --values cpu -o "$tmp/c.csv" -- "$PY" "$SRC/recorder/beam_finish.py" \
	2>"$tmp/err2" || fail "record --values cpu: $(tail -3 "$tmp/err2")"
grep -q '^generated \[9, 9\] of 9$' "$tmp/err2" ||
	fail "--values cpu: $(grep '^generated' "$tmp/err2")"

# A topk over scores of which some carry a -1e9 penalty (a Python number
# or an exact tensor) chooses the others; a where() with -1e9 as well;
# with no sentinel anywhere, the uniform routing as before.
cat >"$tmp/topk.py" <<'PY'
import torch
x = torch.randn(2, 8, device="cuda")
pen = torch.tensor([0.0] * 3 + [-1e9] * 5, device="cuda")
print("add", sorted(torch.topk(x + pen, 3)[1][0].tolist()))
print("sub", sorted(torch.topk(torch.cat((x[:, :4] - 1e9, x[:, 4:]), 1), 4)[1][1].tolist()))
m = torch.tensor([True] * 4 + [False] * 4, device="cuda")
print("where", sorted(torch.topk(torch.where(m, -1e9, x), 4)[1][0].tolist()))
print("small", sorted(torch.topk(x + pen, 5, largest=False)[1][0].tolist()))
PY
$MEMSIM record -o "$tmp/t.csv" -- "$PY" "$tmp/topk.py" 2>"$tmp/err" ||
	fail "record topk: $(tail -3 "$tmp/err")"
grep '^add\|^sub\|^where\|^small' "$tmp/err" >"$tmp/out"
printf 'add [0, 1, 2]\nsub [4, 5, 6, 7]\nwhere [4, 5, 6, 7]\nsmall [3, 4, 5, 6, 7]\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "topk: $(cat "$tmp/out")"
finish recorder_beam_sentinel
