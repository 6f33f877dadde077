#!/bin/sh
# memsim record --symbolic B=V: one recording for a family of sizes
# (docs/symbolic-sizes.md).  A small model taking B from argv, recorded
# once at B=7 with B symbolic: its sizes are polynomials in B, the range
# where PyTorch's and the recorder's guards hold is in the header, and
# the trace instantiated in C (memsim convert --at) equals the per-value
# recording byte for byte at five values.  A program that uses B as a
# plain int where a size is asked is refused (exit 3, one line), a
# branch on B bounds the range, kernel rules of sizes only are evaluated
# per value, and fit --symbolic instantiates where the trace holds and
# records the rest.  Needs Python 3 and PyTorch; skips
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
# reduction over B; the convolution and the wide model below have them.)
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

# Kernel rules that depend on sizes only are evaluated per value where
# the trace is instantiated, not guarded (kernels.py RULES): a
# reduction's buffer (kernels.reduce_rule: setReduceConfig's powers of
# two) and a convolution's split-K (kernels.split_k_rule: floor(sqrt(N*P*Q)
# / 42) slices).  Here the convolution's backward-weight over 1024*B
# outputs has no split-K below B=7, 2 slices for 7..15, 3 from 16; the
# loss's reductions over B change their blocks at each power of two.
# Recorded at 7 and at 11, the trace holds for 5..21 (the value rules'
# limits: the input's 3072*B <= 65536 elements, the convolution's
# 16384*B > 65536) and instantiates exactly across all of them.
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
for v in 7 11; do
	$MEMSIM record --symbolic B=$v -o "$tmp/conv$v.csv" -- "$PY" \
		"$tmp/conv.py" $v >"$tmp/err" 2>&1 || fail "conv at $v: $(tail -2 "$tmp/err")"
	[ "$(sed -n 2p "$tmp/conv$v.csv" | cut -d' ' -f1-5)" = "#symbol B $v 5 21" ] ||
		fail "conv's range at $v: $(sed -n 2p "$tmp/conv$v.csv")"
done
grep -q ',1744+77824\*B+conv_split_k(16;27;1024\*B;132),0,temporary,' "$tmp/conv7.csv" ||
	fail "no split-K rule in the trace: $(grep -m1 'backward)$' "$tmp/conv7.csv")"
grep -q ',?reduce_buffer(' "$tmp/conv7.csv" || fail "no reduction rule in the trace"
# same_at LABEL SCRIPT OUT B TRACE...: SCRIPT recorded at B into OUT
# equals each symbolic TRACE instantiated at B, byte for byte.
same_at() {
	label=$1 script=$2 out=$3 b=$4
	shift 4
	$MEMSIM record -o "$out" -- "$PY" "$script" "$b" >/dev/null 2>&1
	for t in "$@"; do
		$MEMSIM convert --at B="$b" "$t" "$tmp/inst.csv" >/dev/null
		cmp -s "$out" "$tmp/inst.csv" ||
			fail "$label B=$b from $(basename "$t"): instantiated != recorded"
	done
}
for b in 5 6 8 15 16 21; do
	same_at conv "$tmp/conv.py" "$tmp/cp$b.csv" $b "$tmp/conv7.csv" \
		"$tmp/conv11.csv"
done

# With cudnn.benchmark the find's workspace (Dispatch.cudnn_find, the
# chosen plan's, split-K's rule in it) is keyed by the shapes'
# expressions: the same rows at 5 and 16 (a SymInt key made the rule
# fail, and its events were left out).
sed 's/^B = int(sys.argv\[1\])$/&; torch.backends.cudnn.benchmark = True/' \
	"$tmp/conv.py" >"$tmp/convb.py"
$MEMSIM record --symbolic B=7 -o "$tmp/convb.csv" -- "$PY" "$tmp/convb.py" 7 \
	>"$tmp/err" 2>&1 || fail "conv benchmark at 7: $(tail -1 "$tmp/err")"
for b in 5 16; do
	same_at "conv benchmark" "$tmp/convb.py" "$tmp/cbp$b.csv" $b \
		"$tmp/convb.csv"
	grep -A1 'assumption,cudnn:benchmark-find' "$tmp/cbp$b.csv" |
		grep -q ',alloc,.*,temporary,cudnn run_conv_plan' ||
		fail "conv benchmark B=$b: no find's workspace"
done

# A reduction's buffer there at some values only ('?' rows): a bias
# gradient of (B, 65600) fp32 rows has none below B=1100 and one from
# there (and the sum's own buffer everywhere).  Recorded at 7 (absent)
# and at 1500 (there), each instantiates exactly at values on both
# sides, the rows after the buffer renumbered.
cat >"$tmp/wide.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
m = torch.nn.Sequential(torch.nn.Linear(16, 65600), torch.nn.ReLU()).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(B, 16).cuda()
m(x).sum().backward()
opt.step()
PY
for v in 7 1500; do
	$MEMSIM record --symbolic B=$v -o "$tmp/w$v.csv" -- "$PY" "$tmp/wide.py" $v \
		>"$tmp/err" 2>&1 || fail "wide at $v: $(tail -2 "$tmp/err")"
	[ "$(sed -n 2p "$tmp/w$v.csv" | cut -d' ' -f1-5)" = "#symbol B $v 2 4096" ] ||
		fail "wide's range at $v: $(sed -n 2p "$tmp/w$v.csv")"
done
grep -q '^[0-9]*,[0-9]*,alloc,1,?reduce_buffer(B;65600;4;4;4;4;0;132;2048),0,temporary,' \
	"$tmp/w7.csv" || fail "the bias gradient's buffer absent at 7 not numbered 1"
for b in 2 5 1000 1100 3000; do
	same_at wide "$tmp/wide.py" "$tmp/wp$b.csv" $b "$tmp/w7.csv" \
		"$tmp/w1500.csv"
done
[ "$(grep -c 'gpu_reduce_kernel' "$tmp/wp1000.csv")" -eq 2 ] &&
	[ "$(grep -c 'gpu_reduce_kernel' "$tmp/wp1100.csv")" -eq 4 ] ||
	fail "the bias gradient's buffer not from 1100 on"

# Leaving autocast drops its cache of the weights' bf16 copies
# (clear_autocast_cache: a hash map keyed by the weights' TensorImpl
# addresses, emptied in the order of its slots, which differ from run to
# run): the frees in the order the copies were made, Sequential.0's
# first, so that every recording, symbolic or at a value, has the same
# rows in the same order (nanoGPT's and llama2.c's training were "the
# same rows in another order" in tests/corpus_symbolic.sh).
cat >"$tmp/ac.py" <<'PY'
import sys, torch
B = int(sys.argv[1])
m = torch.nn.Sequential(*[torch.nn.Linear(32 + 8 * i, 40 + 8 * i, bias=False)
                          for i in range(12)]).cuda()
x = torch.randn(B, 32).cuda()
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
    y = m(x)
PY
$MEMSIM record --symbolic B=7 -o "$tmp/ac7.csv" -- "$PY" "$tmp/ac.py" 7 \
	>"$tmp/err" 2>&1 || fail "autocast at 7: $(tail -2 "$tmp/err")"
[ "$(sed -n 2p "$tmp/ac7.csv" | cut -d' ' -f1-5)" = "#symbol B 7 2 546" ] ||
	fail "autocast's range: $(sed -n 2p "$tmp/ac7.csv" | cut -c1-80)"
for b in 2 5 7 100 546; do
	same_at autocast "$tmp/ac.py" "$tmp/acp$b.csv" $b "$tmp/ac7.csv"
done
# the layers whose bf16 weight (2 x in x out bytes) each free is
casts=$(awk -F, '$3 == "alloc" && $8 ~ /^Sequential\.[0-9]+$/ {
		n = substr($8, 12); if ($5 == 2 * (32 + 8 * n) * (40 + 8 * n)) w[$4] = n }
	$3 == "free_completed" && ($4 in w) { printf "%s ", w[$4] }' "$tmp/acp5.csv")
[ "$casts" = "0 1 2 3 4 5 6 7 8 9 10 11 " ] ||
	fail "autocast's copies freed in the order $casts"

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
