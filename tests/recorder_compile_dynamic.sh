#!/bin/sh
# torch.compile under memsim record --fake: a frame called with a new
# size is compiled again with that dimension dynamic (Dynamo's
# automatic_dynamic_shapes), and that graph serves every later size but
# 0 and 1, which PyTorch specializes.  The recorder counted a pointwise
# kernel's configurations with int() of its numel (compiled.py,
# Program._configs), which on a symbolic numel added a guard that pinned
# the size: each new size compiled a static graph again (nanoGPT-moe's
# compiled experts, one token count each, hit recompile_limit in the
# first evaluation and then ran eagerly under --values cpu; the H200 run
# of PyTorch 2.11 compiled the expert dynamic at the second count).
# Now the size hint, as pointwise()'s size_hints: four graphs for 100
# 150 200 250 1 0 (six before), and three L2-flush blocks (the GELU of
# the static, the dynamic and the 1-row graph; the 0-row one has a
# single configuration).  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/d.csv" -- "$PY" "$SRC/recorder/compile_dynamic.py" \
	100 150 200 250 1 0 >"$tmp/out" 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
g=$(sed -n "s/^graphs //p" "$tmp/out" "$tmp/err")
[ "$g" = 4 ] || fail "graphs compiled '$g', want 4 (100, dynamic, 1, 0)"
grep -q recompile_limit "$tmp/err" && fail "recompile_limit reached"
f=$(grep -c ',triton autotune L2 flush$' "$tmp/d.csv")
[ "$f" = 3 ] || fail "$f L2-flush blocks, want 3"
finish recorder_compile_dynamic
