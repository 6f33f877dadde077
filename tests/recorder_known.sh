#!/bin/sh
# memsim record --fake on loops that stop on tensor values
# (traces/memsim_record/known.py): values known exactly, the assumptions
# left, and a loop on unknown values stopped with one line.  Needs Python 3
# and PyTorch; skips (77) without them.  No transformers: the generate()
# loop is written here as transformers' _sample writes it.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

# 1. generate(): unfinished = ones(B) & ~(full(False) | full(len >= max)
# | isin(ids[:, -1], eos)), stop when unfinished.max() == 0.  The length
# criterion is known exactly; isin of unknown tokens is assumed to match
# no EOS.  So each call runs exactly max_new_tokens steps, asks no
# .item() assumption, and notes one isin assumption a step: 5 + 3 = 8.
$MEMSIM record --item-repeats 1000 -o "$tmp/gen.csv" -- "$PY" "$SRC/recorder/known_gen.py" \
	2>"$tmp/err" || fail "record generate: $(tail -3 "$tmp/err")"
# (memsim record passes the script's stdout to stderr)
grep '^steps' "$tmp/err" >"$tmp/out"
printf 'steps 5 shape (4, 15)\nsteps 3 shape (2, 33)\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "generate steps: $(cat "$tmp/out")"
grep -q "; 8 assumptions (isin:no-match 8)$" "$tmp/err" ||
	fail "generate assumptions: $(cat "$tmp/err")"
# The token ids grow by one column a step, each a new torch.cat output of
# B x len longs: 4 x 11..15 x 8 bytes, then 2 x 31..33 x 8.
cats=$(awk -F, '$3 == "alloc" && $8 == "known_gen.py:28 generate" { printf "%s ", $5 }' "$tmp/gen.csv")
[ "$cats" = "352 384 416 448 480 496 512 528 " ] || fail "cat sizes: $cats"
# Peak live, at the fifth step's head output of the first call: the two
# parameters (2 x 1000 x 64 x 4 = 512000), the cuBLAS workspace (33554432
# on sm90), the prompt x (4 x 10 x 8 = 320), eos (8), the embedding output
# (4 x 64 x 4 = 1024), the new and the previous logits (2 x 4 x 1000 x 4),
# nxt (32), ids (4 x 14 x 8 = 448), done (4) and unfinished (32).
want=$((512000 + 33554432 + 320 + 8 + 1024 + 32000 + 32 + 448 + 4 + 32))
grep -q "peak live $want bytes" "$tmp/err" || fail "generate peak (want $want): $(cat "$tmp/err")"
$MEMSIM run "$tmp/gen.csv" >/dev/null || fail "memsim run of the recording"

# 2. Which values are known: a zero times anything, False & x, True | x,
# arithmetic, where() on a known condition, in-place ops; small tensors of
# known origin exactly (values.py: a write through a view, 5; a bf16 1/3
# as bf16 holds it; a _foreach_ write, 2.0); an unknown operand makes
# values unknown: it takes the assumption (float 1.0); a `.data` swap
# carries the new data's values (5.0); u.max() of randint(0, 10) is its
# range's top, 9 (assumption
# range:max), which decides == 0; a straight-through estimator
# t + (1 - t).detach() is 1 (known.py, Known.straight), in either order,
# and against another tensor unknown (item:bool, False).
$MEMSIM record --item-int 7 -o "$tmp/v.csv" -- "$PY" "$SRC/recorder/known_values.py" \
	2>"$tmp/err" || fail "record values: $(tail -3 "$tmp/err")"
grep -v '^memsim' "$tmp/err" >"$tmp/out"
printf '%s\n' 0 False True 30 2.5 True 5 3.0 1.0 3.5 0.333984375 4 False 2.0 5.0 \
	True True False >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "values: $(diff "$tmp/want" "$tmp/out")"
grep -q "3 assumptions (item:bool 1, item:float 1, range:max 1)$" "$tmp/err" ||
	fail "values assumptions: $(cat "$tmp/err")"

# 3. A loop on unknown values never ends under --fake: past --item-repeats
# asks from one line it stops with one line naming that line, status 1,
# no trace, naming --item-bool and --values cpu (the program's own values
# end such a loop: torchdiffeq's adaptive step test); --item-bool true
# answers it.  The script's own
# `except Exception` does not swallow the stop.
cat >"$tmp/endless.py" <<'PY'
import torch
x = torch.randn(8, device="cuda")
while True:
    try:
        if (x > 5).any():
            break
    except Exception:
        pass
    x = torch.randn(8, device="cuda")
PY
$MEMSIM record --item-repeats 40 -o "$tmp/e.csv" -- "$PY" "$tmp/endless.py" 2>"$tmp/err"
[ $? -eq 1 ] || fail "endless loop: status"
[ "$(grep -c . "$tmp/err")" -eq 1 ] || fail "endless loop: not one line: $(cat "$tmp/err")"
grep -q "^memsim record: $tmp/endless.py:5 <module> asked for a bool .item() 40 times, each answered by the assumption False: .*--item-bool true, or record with --values cpu; no trace written$" "$tmp/err" ||
	fail "endless loop message: $(cat "$tmp/err")"
ls "$tmp"/e.csv* >/dev/null 2>&1 && fail "endless loop left a trace"
$MEMSIM record --item-bool true --item-repeats 40 -o "$tmp/e.csv" -- "$PY" "$tmp/endless.py" 2>"$tmp/err" ||
	fail "--item-bool true: $(cat "$tmp/err")"
grep -q "1 assumption (item:bool 1)$" "$tmp/err" || fail "--item-bool true: $(cat "$tmp/err")"
$MEMSIM record --item-bool yes -o "$tmp/e.csv" -- "$PY" "$tmp/endless.py" 2>"$tmp/err" &&
	fail "--item-bool yes accepted"
grep -q "item-bool" "$tmp/err" || fail "--item-bool yes: $(cat "$tmp/err")"
$MEMSIM record --item-repeats 0 -o "$tmp/e.csv" -- "$PY" "$tmp/endless.py" 2>"$tmp/err" &&
	fail "--item-repeats 0 accepted"
grep -q "item-repeats" "$tmp/err" || fail "--item-repeats 0: $(cat "$tmp/err")"

# 3. Exact values gathered at unknown indices keep their range (the node
# -> graph vector of a graph batch, reordered by a sort), sort's values
# too, and so does a scatter_ whose known index writes every element;
# max() of a range of integers is its top and min() its bottom
# (assumptions range:max, range:min): PyTorch Geometric's global pools
# size their output by int(batch.max()) + 1, 60 graphs here, not the
# `--item-int` default's 2.
$MEMSIM record -o "$tmp/gp.csv" -- "$PY" "$SRC/recorder/graph_pool.py" \
	2>"$tmp/err" || fail "record graph_pool: $(tail -3 "$tmp/err")"
grep -qx "60 (60, 32) 59 0" "$tmp/err" || fail "graph pool: $(grep -v '^memsim' "$tmp/err")"
awk -F, '$3 == "alloc" && $5 == 7680' "$tmp/gp.csv" | grep -q . ||
	fail "no 60 x 32 fp32 pooled output (7680 bytes)"

finish recorder_known.sh
