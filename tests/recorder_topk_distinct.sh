#!/bin/sh
# memsim record --fake: the k indices of a row of topk are k distinct
# positions (at::topk selects k elements of each slice), over a dimension
# of any size (values.py: Values._rules, the uniform routing beyond
# ROUTE_MAX for a topk of k > 1).  openai/whisper's beam search
# (decoding.py, BeamSearchDecoder.update) reads each beam's top
# beam_size + 1 tokens over the 51,865-token vocabulary to the host and
# keys the candidates by their token sequences: a range alone answered
# every index's .item() with its midpoint, one token, so the candidates
# collapsed to one a beam and the next update raised "torch.Size([16,
# 5])[0] % 5 != 0".  A topk of k 1 (argmax's) and a topk over at most
# ROUTE_MAX entries are as before.  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
beam = 5
logprobs = torch.randn(2 * beam, 51865, device="cuda").log_softmax(-1)
for i in range(2):
    cands = {}
    for j in range(beam):
        prefix = [50258, 50259]
        for lp, tok in zip(*logprobs[i * beam + j].topk(beam + 1)):
            cands[tuple(prefix + [tok.item()])] = lp.item()
    print("candidates", len(cands))
_, one = logprobs[0].topk(1)
print("one", one.item())
_, few = torch.randn(4, 100, device="cuda").topk(3)
print("few", few.tolist())
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# each beam's 6 tokens distinct: 6 candidates an audio (the 5 beams share
# their prefix here, as at whisper's first step)
[ "$(grep -c '^candidates 6$' "$tmp/out")" = 2 ] || \
	fail "candidates: $(cat "$tmp/out")"
# k 1: the range's midpoint, as before
grep -q '^one 25932$' "$tmp/out" || fail "k 1: $(cat "$tmp/out")"
# 100 entries: the uniform routing, as before
grep -q '^few \[\[0, 4, 8\], \[1, 5, 9\], \[2, 6, 10\], \[3, 7, 11\]\]$' \
	"$tmp/out" || fail "routing: $(cat "$tmp/out")"
finish recorder_topk_distinct.sh
