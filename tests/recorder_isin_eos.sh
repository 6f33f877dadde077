#!/bin/sh
# memsim record --fake: generate()'s EOS criterion isin(last_tokens, eos)
# of unknown tokens is assumed to match none (isin:no-match), so the loop
# runs to its max length; a comparison of such tokens with the same EOS
# id afterwards (completion_ids == eos_token_id: TRL's GRPO trainer finds
# each completion's end so, then takes c[mask].tolist() of each row on
# the host) was unknown, its mask the --item-bool default False
# everywhere: every completion empty, and GRPO stopped at ids[-1]
# (IndexError).  Known now answers == and != of an integer tensor of
# unknown values against an id an isin was assumed not to match as no
# match (isin:no-match): every completion has its L tokens.  Ids no isin
# tested, and tensors whose values are known (a prompt holding EOS), are
# answered as before.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/g.py" <<'PY'
import torch
B, L, V, EOS, EOS2 = 4, 8, 100, 2, 3
eos = torch.tensor([EOS, EOS2], device="cuda")
logits = torch.randn(B, V, device="cuda")
toks = []
for _ in range(L):
    nxt = torch.multinomial(logits.softmax(-1), 1).squeeze(1)
    toks.append(nxt)
    done = torch.isin(nxt, eos)
comp = torch.stack(toks, 1)
is_eos = comp == EOS
eos_idx = torch.full((B,), L, dtype=torch.long, device="cuda")
eos_idx[is_eos.any(dim=1)] = is_eos.int().argmax(dim=1)[is_eos.any(dim=1)]
mask = torch.arange(L, device="cuda").expand(B, -1) <= eos_idx.unsqueeze(1)
ids = [c[m].tolist() for c, m in zip(comp.cpu(), mask.bool().cpu())]
print("lens", [len(i) for i in ids])
print("ne", bool((comp != EOS2).all()), bool((EOS2 == comp).any()))
prompt = torch.tensor([[5, EOS, 7, EOS2]], device="cuda")
print("prompt", int((prompt == EOS).sum()), int((prompt != EOS2).sum()))
x = torch.empty(sum(len(i) for i in ids) << 18, device="cuda")
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/g.csv" -- "$PY" g.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "lens [8, 8, 8, 8]" "ne True False" "prompt 1 3"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
# x: 4 completions of 8 tokens, 1 MiB a token
grep -q ',alloc,[0-9]*,33554432,' "$tmp/g.csv" ||
	fail "no 32 MiB allocation: $(grep -c alloc "$tmp/g.csv") allocations"
# the isin of each step, and == / != of the tokens (comp == EOS, and the
# two of EOS2)
n=$(grep -c ',assumption,isin:no-match ' "$tmp/g.csv")
[ "$n" -eq 11 ] || fail "$n isin:no-match assumptions"
finish recorder_isin_eos.sh
