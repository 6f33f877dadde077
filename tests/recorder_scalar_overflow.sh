#!/bin/sh
# memsim record --fake: a number written into a GPU tensor of a type
# whose range it lies outside stops the recording as it stops the GPU
# (traces/memsim_record/overflow.py: c10::checked_convert in fill_,
# masked_fill, full, index_fill, clamp).  muse-maskgit's flash attention
# masks bf16 scores with -torch.finfo(torch.float32).max; its real runs
# raised "value cannot be converted to type c10::BFloat16 without
# overflow" on the H100, the recording ran to its end.  The numbers a
# type takes (its largest, an infinity, NaN, a negative integer into
# uint8 that wraps) still record, and so does the same fill in fp32.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/ok.py" <<'PY'
import torch
big = torch.finfo(torch.float32).max
x = torch.zeros(8, device="cuda", dtype=torch.bfloat16)
m = torch.arange(8, device="cuda") < 3
x.masked_fill_(m, torch.finfo(x.dtype).min)
x.masked_fill_(m, float("-inf"))
x.fill_(float("nan"))
torch.zeros(4, device="cuda").masked_fill_(m[:4], -big)
torch.full((4,), 65504.0, device="cuda", dtype=torch.float16)
torch.zeros(4, device="cuda", dtype=torch.uint8).fill_(-200)
torch.zeros(4, device="cuda", dtype=torch.int32).clamp(max=1.5e10)
print("ok")
PY
(cd "$tmp" && $MEMSIM record --fake -o ok.csv -- "$PY" ok.py) >"$tmp/out" \
	2>"$tmp/err" || fail "record ok.py: $(tail -3 "$tmp/err")"
grep -qx ok "$tmp/err" || fail "ok.py: $(tail -3 "$tmp/err")"
# Each of these stops where the GPU stops, with PyTorch's message
n=0
while IFS='|' read -r stmt want; do
	n=$((n + 1))
	printf 'import torch\nx = torch.zeros(8, device="cuda", dtype=torch.%s)\nm = torch.arange(8, device="cuda") < 3\n%s\nprint("ran")\n' \
		"${stmt%% *}" "${stmt#* }" >"$tmp/c$n.py"
	(cd "$tmp" && $MEMSIM record --fake -o c$n.csv -- "$PY" c$n.py) \
		>"$tmp/c$n.out" 2>"$tmp/c$n.err" &&
		fail "case $n ($stmt) recorded"
	grep -q "^RuntimeError: value cannot be converted to type $want without overflow" "$tmp/c$n.err" ||
		fail "case $n ($stmt): $(tail -2 "$tmp/c$n.err")"
	grep -q "c$n.py\", line 4" "$tmp/c$n.err" ||
		fail "case $n: no line 4 in the traceback: $(cat "$tmp/c$n.err")"
	grep -q '^ran$' "$tmp/c$n.err" && fail "case $n went on"
done <<'EOF2'
bfloat16 x.masked_fill_(m, -torch.finfo(torch.float32).max)|c10::BFloat16
float16 x.masked_fill(m, torch.tensor(-1e5))|c10::Half
float16 x.fill_(65520.0)|c10::Half
float16 torch.full((4,), 1e6, device="cuda", dtype=torch.float16)|c10::Half
float16 x.new_full((2,), 7e4)|c10::Half
bfloat16 x.clamp(min=-1e39)|c10::BFloat16
float32 x.clamp_max_(1e300)|float
uint8 x.fill_(-256)|uint8_t
int32 x.index_fill_(0, torch.tensor([1], device="cuda"), 2**31)|int
float16 torch.full_like(x, -7e4)|c10::Half
EOF2
finish recorder_scalar_overflow.sh
