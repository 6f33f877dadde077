#!/bin/sh
# memsim record --fake: a token sampled by torch.multinomial keeps its
# range ([0, n) of the n categories) through an in-place shift and a cat
# to a prompt of known values.  Bark's coarse generation
# (bark/generation.py generate_coarse) samples from a 1024-wide slice of
# the logits, `item_next += logit_start_idx`, cat's it to the history
# prompt, and at the end reads the whole sequence on the host and asserts
# every code lies in [0, 1024) after subtracting the slice's start: the
# in-place add lost the range (the write made it stale before the rule
# read it) and the cat gave the unknown tokens the default answer 1, so
# the assertion failed.  Now `a += c` moves the range as `a + c` does, and
# the host reads the elements a cat took from a piece of integers in a
# known range as that range's value (as its .item() would: assumption
# part:range); on the device they stay unknown (the mask rules of
# tests/recorder_partial_values.sh still assume them).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
probs = torch.softmax(torch.randn(1024, device="cuda"), -1)
a = torch.multinomial(probs, num_samples=1).to(torch.int32)
a += 10000
print("inplace", a.cpu().tolist())
h = torch.tensor([[10005, 11030]], device="cuda")
x = h
for step in range(2):
    b = torch.multinomial(probs, num_samples=1).to(torch.int32)
    b += 10000 + step * 1024
    x = torch.cat((x, b[None]), dim=1)
print("cat", x.cpu().tolist())
# no prompt (bark without a history prompt: an empty one, its codes
# alone), read through a detach
y = torch.zeros((1, 0), dtype=torch.int64).cuda()
for step in range(2):
    b = torch.multinomial(probs, num_samples=1).to(torch.int32)
    b += 10000 + step * 1024
    y = torch.cat((y, b[None]), dim=1)
print("empty", y.detach().cpu().tolist())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
grep '^inplace\|^cat\|^empty' "$tmp/err" >"$tmp/out"
# each sample the lower median of its range: 511 + its shift
cat >"$tmp/want" <<'OUT'
inplace [10511]
cat [[10005, 11030, 10511, 11535]]
empty [[10511, 11535]]
OUT
cmp -s "$tmp/out" "$tmp/want" || fail "ranges: $(diff "$tmp/want" "$tmp/out")"
grep -q 'part:range' "$tmp/err" || fail "no part:range assumption: $(tail -2 "$tmp/err")"
finish recorder_sampled_range.sh
