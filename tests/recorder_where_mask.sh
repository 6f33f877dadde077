#!/bin/sh
# An additive attention mask made by torch.where of a bool mask and two
# scalars (transformers' masking_utils.eager_mask) is a float tensor
# B x 1 x S x S, over the recorder's SHADOW_LIMIT for floating tensors
# at 16 x 80 x 80: it had no values, so what a program reads back from
# it was an assumption.  NLLB-MoE's router (NllbMoeTop2Router.
# route_tokens) multiplies its expert masks by `~padding_mask.bool()` of
# the mask's last query row; under run_translation.py (eager attention,
# 16 sentences of up to 80 tokens) every expert's token count was then a
# `nonzero` assumption, 4 experts of about 5000 rows where the real
# router sends 2 of about 1000, and the recording was 32% high.  Now
# torch.where's output of a shadowed condition and known operands keeps
# its values as a copy from the host does (values._upload_where), and
# its views read them: the padding is counted exactly.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/m.csv" -- "$PY" "$SRC/recorder/where_mask.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# 16 rows of 80 - 3 i tokens, i = 0..15: 1280 - 3 * (0 + ... + 15) = 920
# kept (the mask's zeros: ~bool() of 0 is True)
grep -q '^kept 920$' "$tmp/out" ||
	fail "kept: $(grep -v '^memsim record' "$tmp/out" | head -3)"
grep -q '^rows 920$' "$tmp/out" || fail "rows: $(grep '^rows' "$tmp/out")"
grep -q '^picked (920, 64)$' "$tmp/out" ||
	fail "picked: $(grep '^picked' "$tmp/out")"
$MEMSIM info "$tmp/m.csv" >"$tmp/info" 2>&1 || fail "info"
grep -q 'mask\|nonzero\|item:' "$tmp/info" &&
	fail "assumptions: $(grep -A3 '^assumptions' "$tmp/info")"
finish recorder_where_mask
