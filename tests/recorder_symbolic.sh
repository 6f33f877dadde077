#!/bin/sh
# memsim record --symbolic B=V: one recording for a family of sizes
# (docs/symbolic-sizes.md).  A small model taking B from argv, recorded
# once at B=7 with B symbolic: its sizes are polynomials in B, the range
# where PyTorch's and the recorder's guards hold is in the header, and
# the trace instantiated in C (memsim convert --at) equals the per-value
# recording byte for byte at five values.  A program that uses B as a
# plain int where a size is asked is refused (exit 3, one line), a
# branch on B bounds the range, and fit --symbolic instantiates where the
# trace holds and records the rest.  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/lin.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
m = torch.nn.Sequential(torch.nn.Linear(16, 32, bias=False),
                        torch.nn.ReLU(),
                        torch.nn.Linear(32, 8, bias=False)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(B, 16).cuda()
out = m(x)
out.backward(torch.randn_like(out))
opt.step()
PY
$MEMSIM record --symbolic B=7 -o "$tmp/s.csv" -- "$PY" "$tmp/lin.py" 7 \
	>"$tmp/err" 2>&1 || fail "record --symbolic: $(tail -3 "$tmp/err")"
# The input (B x 16 floats) is 64*B bytes; the first Linear's output
# (B x 32) 128*B; the last's 32*B; parameters constant.  The recorder's
# value rules keep values of tensors up to 65536 elements
# (memsim_record/values.py: SHADOW_LIMIT), a guard each on B x 16 and
# B x 32: the trace holds for 2..2048.  (No bias and no loss: no
# reduction over B, whose kernel rule picks its blocks by the power of
# two below a size, a guard at each: the convolution below has them.)
[ "$(sed -n 1p "$tmp/s.csv")" = "#memsim-symbolic 1" ] || fail "magic: $(head -1 "$tmp/s.csv")"
[ "$(sed -n 2p "$tmp/s.csv" | cut -d' ' -f1-5)" = "#symbol B 7 2 2048" ] ||
	fail "range: $(sed -n 2p "$tmp/s.csv")"
grep -q '^2,2,alloc,[0-9]*,64\*B,0,input,' "$tmp/s.csv" || fail "input not 64*B"
[ "$(grep -c ',128\*B,0,activation,' "$tmp/s.csv")" -eq 2 ] || fail "activations not 128*B"
grep -q ',32\*B,0,activation,Sequential.2$' "$tmp/s.csv" || fail "output not 32*B"
grep -q ',2048,0,parameter,Sequential.0.weight$' "$tmp/s.csv" || fail "weight not 2048"
for b in 2 3 64 1000 2048; do
	$MEMSIM record -o "$tmp/p$b.csv" -- "$PY" "$tmp/lin.py" $b >/dev/null 2>&1 ||
		fail "record B=$b"
	$MEMSIM convert --at B=$b "$tmp/s.csv" "$tmp/i$b.csv" >/dev/null ||
		fail "convert --at B=$b"
	cmp -s "$tmp/p$b.csv" "$tmp/i$b.csv" ||
		fail "B=$b: instantiated != recorded: $(diff "$tmp/p$b.csv" "$tmp/i$b.csv" | head -4)"
done
# B=1000's input: 64000 bytes at the address the recorder's rule gives
# (2^32 + 2560 + 1536), and the first activation after it, 64000 bytes
# on ((64000 + 511) / 512 + 1) * 512 = 64512
grep -q '^2,2,alloc,4294971392,64000,0,input,' "$tmp/i1000.csv" ||
	fail "B=1000 row 2: $(sed -n 4p "$tmp/i1000.csv")"
grep -q '^3,3,alloc,4295035904,128000,0,activation,' "$tmp/i1000.csv" ||
	fail "B=1000 row 3: $(sed -n 5p "$tmp/i1000.csv")"
expect_error 'B=2049 is outside the range it holds for, 2..2048' \
	$MEMSIM convert --at B=2049 "$tmp/s.csv" "$tmp/x.csv"
[ ! -e "$tmp/x.csv" ] || fail "a refused instantiation wrote its output"
expect_error "a symbolic trace .*convert --at" $MEMSIM run "$tmp/s.csv"
expect_error "symbol is B" $MEMSIM convert --at S=3 "$tmp/s.csv" "$tmp/x.csv"
expect_error "not a symbolic trace" $MEMSIM convert --at B=3 "$tmp/p2.csv" "$tmp/x.csv"
expect_error "fit: --symbolic records the command" $MEMSIM fit --cap 1G \
	--vary B=1..4 --symbolic --traces "$tmp/p{B}.csv"

# B used as a plain int where a size is asked: a tensor of B * 4
# elements (the int 28) viewed as (B, 4) pins B to 7 (Eq(4*B,28)).
cat >"$tmp/pin.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
x = torch.empty(B * 4, device="cuda")
y = x.view(B, 4).t().contiguous()
PY
$MEMSIM record --symbolic B=7 -o "$tmp/pin.csv" -- "$PY" "$tmp/pin.py" 7 \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 3 ] || fail "a specialization: exit $rc, not 3: $(tail -2 "$tmp/err")"
grep -q "^memsim record: --symbolic B=7 refused: a guard pins B to 7" "$tmp/err" ||
	fail "no refusal line: $(tail -2 "$tmp/err")"
[ ! -e "$tmp/pin.csv" ] || fail "a refused recording wrote its trace"

# A branch on B in the program bounds the range: B > 8 or not.
cat >"$tmp/branch.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
x = torch.zeros(B, 4, device="cuda")
y = torch.cat([x, x]) if x.shape[0] > 8 else x + 1
PY
for v in 7 11; do
	$MEMSIM record --symbolic B=$v:100 -o "$tmp/b$v.csv" -- "$PY" \
		"$tmp/branch.py" $v >/dev/null 2>&1 || fail "record branch B=$v"
done
[ "$(sed -n 2p "$tmp/b7.csv" | cut -d' ' -f1-5)" = "#symbol B 7 2 8" ] ||
	fail "branch at 7: $(sed -n 2p "$tmp/b7.csv")"
[ "$(sed -n 2p "$tmp/b11.csv" | cut -d' ' -f1-5)" = "#symbol B 11 9 100" ] ||
	fail "branch at 11: $(sed -n 2p "$tmp/b11.csv")"

# A convolution's backward-weight split-K (memsim_record/kernels.py
# _split_k: sqrt(N*P*Q) / 42 slices) on the symbol: its floor is found by
# guards, 2 slices for 1024*B in [42^2 * 4, 42^2 * 9), so B=7..15; the
# reduction rule's power of two below B (the loss's mean over B) makes
# it 8..15 around 11; it instantiates exactly.  At 7 the two meet: the
# guards hold at B=7 alone, refused.
cat >"$tmp/conv.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
m = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1),
                        torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
                        torch.nn.Flatten(),
                        torch.nn.Linear(16 * 32 * 32, 10)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(B, 3, 32, 32).cuda()
y = torch.randint(0, 10, (B,)).cuda()
torch.nn.functional.cross_entropy(m(x), y).backward()
opt.step()
PY
$MEMSIM record --symbolic B=11 -o "$tmp/conv.csv" -- "$PY" "$tmp/conv.py" 11 \
	>"$tmp/err" 2>&1 || fail "conv: $(tail -2 "$tmp/err")"
[ "$(sed -n 2p "$tmp/conv.csv" | cut -d' ' -f1-5)" = "#symbol B 11 8 15" ] ||
	fail "conv's range: $(sed -n 2p "$tmp/conv.csv")"
$MEMSIM record --symbolic B=7 -o "$tmp/conv7.csv" -- "$PY" "$tmp/conv.py" 7 \
	>"$tmp/out" 2>"$tmp/err"
[ $? -eq 3 ] && grep -q "refused: the guards hold at B=7 alone" "$tmp/err" ||
	fail "conv at 7: $(tail -1 "$tmp/err")"
for b in 8 15; do
	$MEMSIM record -o "$tmp/cp$b.csv" -- "$PY" "$tmp/conv.py" $b >/dev/null 2>&1
	$MEMSIM convert --at B=$b "$tmp/conv.csv" "$tmp/ci$b.csv" >/dev/null
	cmp -s "$tmp/cp$b.csv" "$tmp/ci$b.csv" || fail "conv B=$b: instantiated != recorded"
done

# fit --symbolic: 4 MiB a value of B (a 1 MiB-float row each), 100 MiB
# of cap: B=1 and 40 recorded (the ends), then the two symbolic
# recordings at the first guess and the next (11 and 12), which agree
# and hold for 2..40 (fit's top); every value between 1 and 40
# instantiated, the answer B=12 (96 MiB; 13 needs 104), its trace the
# recording's bytes.
cat >"$tmp/fit.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
x = torch.empty(B, 1 << 20, device="cuda")
y = x * 2
PY
mkdir "$tmp/keep"
$MEMSIM fit --cap 100M --vary B=1..40 --symbolic -k "$tmp/keep" -- "$PY" \
	"$tmp/fit.py" {B} >"$tmp/fit" 2>"$tmp/ferr" || fail "fit: $(tail -3 "$tmp/ferr")"
grep -q '^symbolic   B=2\.\.40 instantiated from one symbolic recording .*recorded at 11 and 12, the same trace' "$tmp/fit" ||
	fail "fit's symbolic line: $(grep symbolic "$tmp/fit")"
grep -qx 'recordings 4 (2 with --symbolic; 38 values instantiated)' "$tmp/fit" ||
	fail "fit's recordings: $(grep recordings "$tmp/fit")"
grep -q '^           12 .*96.00 MiB .*fits: the answer (symbolic)$' "$tmp/fit" ||
	fail "fit's curve: $(cat "$tmp/fit")"
grep -q '^           13 .*out of memory (symbolic)$' "$tmp/fit" ||
	fail "fit's B=13: $(grep '^           13 ' "$tmp/fit")"
grep -q '^largest    B=12$' "$tmp/fit" || fail "fit's answer: $(grep largest "$tmp/fit")"
$MEMSIM record -o "$tmp/p12.csv" -- "$PY" "$tmp/fit.py" 12 >/dev/null 2>&1
cmp -s "$tmp/p12.csv" "$tmp/keep/B-12.csv" || fail "fit's B=12 != its recording"
finish recorder_symbolic
