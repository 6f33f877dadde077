#!/bin/sh
# memsim record --fake: a tensor some of whose elements are known keeps
# them (Values._part): a decoding loop's tokens, a known prompt cat'ed
# with one token of unknown value a step, then padded with the
# end-of-text token (whisper's GreedyDecoder.finalize).  The first
# end-of-text, `(t == eot).nonzero()[0, 0]`, lay inside the prompt (the
# mask rule spread its true elements over the whole row, prompt
# included): every text came out empty, and whisper divided by its
# length.  Now the prompt's elements are known False and the pad's True,
# the rule assumes only the generated ones (half, ending on the last:
# the first true is the second generated token), and any() that a known
# element decides is known.  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
import torch.nn.functional as F
torch.manual_seed(0)
V, eot, sot = 1000, 500, 7
emb = torch.nn.Embedding(V, 32).cuda()
head = torch.nn.Linear(32, V).cuda()
prompt = [sot, 3, 4]
tokens = torch.tensor([prompt]).repeat(2, 1).cuda()
for i in range(20):
    logits = head(emb(tokens))[:, -1]
    nxt = logits.argmax(dim=-1)
    nxt[tokens[:, -1] == eot] = eot
    tokens = torch.cat([tokens, nxt[:, None]], dim=-1)
    if (tokens[:, -1] == eot).all():
        break
tokens = F.pad(tokens, (0, 1), value=eot)
out = [t[len(prompt):(t == eot).nonzero()[0, 0]] for t in tokens]
print([len(o) for o in out], bool((tokens == sot).any()),
      bool((tokens[:, :3] == 3).all()))
lens = torch.zeros(1000 * sum(len(o) for o in out) + 8, device="cuda")
PY
(cd "$tmp" && $MEMSIM record --fake -o a.csv -- "$PY" a.py) >"$tmp/out" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# (the script's output goes to stderr, memsim record's stdout its own)
grep -qx "\[1, 1\] True False" "$tmp/err" ||
	fail "the answers: $(head -1 "$tmp/err")"
awk -F, '$3 == "alloc" && $5 == 8032' "$tmp/a.csv" | grep -q . ||
	fail "no tensor of 2,008 floats (the two texts' lengths)"
grep -q "nonzero a.py:17 =11$" "$tmp/a.csv" ||
	fail "no nonzero assumption at a.py:17 (the prompt known False, 10 of the 20 generated, the pad)"
finish recorder_partial_values.sh
