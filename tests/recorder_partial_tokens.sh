#!/bin/sh
# memsim record --fake: a token buffer keeps its prompt's values while
# each generation step writes a token of unknown value into it.
# lit-llama's generate copies the prompt into torch.empty, reads it with
# index_select and writes each token with index_copy; Meta's llama writes
# the prompt into torch.full of the pad id, then each step's token into
# a column.  The decoded text must hold the prompt: lit-llama's LoRA and
# adapter generate scripts split it at the prompt's "### Response:" and
# stopped with an IndexError when every element read as --item-int
# (values.py: _blank_hold, _blank_unknown; the known elements kept
# through index_select, index_copy and .tolist()).  The tokens are
# assumed by the rules, as before: host:int (1) for the index_copy'd
# buffer, host:range (4, the lower median of the full buffer's range,
# the pad -1 to the sampled 9) for the other.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/p.py" <<'PY'
import torch
prompt = torch.tensor([5, 6, 7], device="cuda")
buf = torch.empty(6, dtype=torch.long, device="cuda")
buf[:3] = prompt
pos = torch.arange(0, 3, device="cuda")
for _ in range(3):
    x = buf.index_select(0, pos)
    nxt = torch.multinomial(torch.softmax(torch.randn(10, device="cuda"), -1), 1)
    pos = pos[-1:] + 1
    buf = buf.index_copy(0, pos, nxt)
print("A", buf.tolist(), x.tolist())
tok = torch.full((2, 6), -1, dtype=torch.long, device="cuda")
tok[0, :3] = prompt
tok[1, :2] = prompt[1:]
for cur in range(3, 6):
    nxt = torch.multinomial(torch.softmax(torch.randn(2, 10, device="cuda"), -1), 1)
    tok[:, cur] = nxt.reshape(-1)
print("B", tok.tolist())
PY
$MEMSIM record --fake -o "$tmp/p.csv" -- "$PY" "$tmp/p.py" >"$tmp/out" 2>&1 ||
	fail "record: $(tail -3 "$tmp/out")"
grep -qx 'A \[5, 6, 7, 1, 1, 1\] \[1\]' "$tmp/out" ||
	fail "index_copy into empty: $(grep '^A' "$tmp/out")"
grep -qx 'B \[\[5, 6, 7, 4, 4, 4\], \[6, 7, -1, 4, 4, 4\]\]' "$tmp/out" ||
	fail "a full buffer's columns: $(grep '^B' "$tmp/out")"
finish recorder_partial_tokens.sh
