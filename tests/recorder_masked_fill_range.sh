#!/bin/sh
# A masked_fill_ (index_put_, scatter_) into part of a tensor of unknown
# values leaves its storage's range unknown: the elements not written keep
# their values.  Values._partial_write returned the written value's range
# for any write into a whole storage whose old range it did not know, as
# if every element had been written: DALLE-pytorch's generate_images masks
# its logits (logits.masked_fill_(logits_mask, -finfo.max)), and every
# logit was then -finfo.max, so topk's values were that point, a count of
# logits below -1e30 was all of them (real runs: the masked ones), and the
# top-k filter's probs.scatter_(1, ind, val) into a tensor of -inf raised
# in the recorder's own bookkeeping under float32 (an integral range's
# value, a Python int of 3.4e38, given to torch.full): values:lost, every
# known value forgotten, at the first sampled token.
# Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/mf.py" <<'PY'
import torch
torch.manual_seed(0)
lin = torch.nn.Linear(16, 1000).cuda()
with torch.no_grad():
    x = lin(torch.randn(16, device="cuda"))
    mask = (torch.arange(1000) < 100).cuda()
    x.masked_fill_(mask, -torch.finfo(x.dtype).max)
    print("all-low", bool((x < -1e30).all()))
    v, i = x.topk(10)
    print("top-low", (v < -1e30).nonzero().shape[0])
    # DALLE-pytorch's top_k filter and gumbel sample
    logits = x[None]
    val, ind = torch.topk(logits, 100)
    probs = torch.full_like(logits, float("-inf"))
    probs.scatter_(1, ind, val)
    noise = torch.zeros_like(probs).uniform_(0, 1)
    s = ((probs + -torch.log(-torch.log(noise))).argmax(dim=-1))
    print("sample", len(s.tolist()))
PY
$MEMSIM record --fake -o "$tmp/mf.csv" -- "$PY" "$tmp/mf.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
for want in "all-low False" "top-low 0" "sample 1"; do
	grep -qxF "$want" "$tmp/out" || fail "'$want' not in: $(grep -E 'low|sample' "$tmp/out")"
done
grep -q "values:lost" "$tmp/mf.csv" && fail "values lost: $(grep values:lost "$tmp/mf.csv")"
# --values cpu agrees
$MEMSIM record --fake --values cpu -o "$tmp/mfc.csv" -- "$PY" "$tmp/mf.py" \
	>"$tmp/outc" 2>&1 || fail "record --values cpu: $(tail -3 "$tmp/outc")"
for want in "all-low False" "top-low 0" "sample 1"; do
	grep -qxF "$want" "$tmp/outc" || fail "cpu: '$want' not in: $(grep -E 'low|sample' "$tmp/outc")"
done
finish recorder_masked_fill_range.sh
