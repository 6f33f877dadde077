#!/bin/sh
# torch.compile(flex_attention) under memsim record --fake: the buffers
# of Inductor's flex-attention templates (compiled.py, Program.
# flex_forward and flex_backward; docs/recording-compile.md).  One
# training step of 2 x 4 heads x 256 x 64, fp32 and bf16, with a
# score_mod (the block mask Dynamo builds in the graph) and with a
# causal block mask made outside.  Forward, in the order the generated
# code allocates: the log-sum-exp and the max scores, B x H x L fp32
# each, then the output, B x H x L x D in the inputs' dtype; the max
# scores freed after the kernel.  Backward: delta (B x H x L fp32), its
# reduction's autotuning (one L2 flush), grad query, grad value, grad key
# (B x H x L x D each), then delta freed.  The templates themselves are
# not autotuned (one configuration in default mode).  Before, the
# forward had no max scores, the backward no delta, and an autotune
# flush after the output and after the second gradient.
# Needs PyTorch with flex_attention; skips (77) without.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c "import torch.nn.attention.flex_attention" 2>/dev/null ||
	{ echo "no flex_attention in this PyTorch"; exit 77; }
cat >"$tmp/flex.py" <<'PY'
import sys
import torch
from torch.nn.attention.flex_attention import flex_attention, \
    create_block_mask
dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[sys.argv[1]]
kw = {}
if sys.argv[2] == "mask":
    kw["block_mask"] = create_block_mask(lambda b, h, m, n: m >= n,
                                         None, None, 256, 256)
else:
    kw["score_mod"] = lambda s, b, h, m, n: s + (m - n)
flex = torch.compile(flex_attention)
q, k, v = (torch.randn(2, 4, 256, 64, device="cuda", dtype=dtype,
                       requires_grad=True) for _ in range(3))
out = flex(q, k, v, **kw)
out.sum().backward()
print("flex", tuple(out.shape), tuple(q.grad.shape))
PY
B=2 H=4 L=256 D=64
stats=$((B * H * L * 4))
# Each part is written as "a SIZE" for an allocation of at least stats
# bytes, "f SIZE" for its free, and the site of each L2 flush; the
# autotuner's clones (fp32's delta) are left out: whether they are made
# on the GPU depends on the peak so far (copy_args_to_cpu_if_needed).
for dt in fp32:4 bf16:2; do
	d=${dt%:*} e=${dt#*:}
	o=$((B * H * L * D * e))
	for m in score mask; do
		t=$d.$m
		(cd "$tmp" && $MEMSIM record -o "$tmp/$t.csv" -- "$PY" flex.py \
			$d $m) >"$tmp/$t.err" 2>&1 ||
			{ fail "record $t: $(tail -3 "$tmp/$t.err")"; continue; }
		grep -qxF "flex (2, 4, 256, 64) (2, 4, 256, 64)" "$tmp/$t.err" ||
			fail "$t: no result"
		$MEMSIM run "$tmp/$t.csv" >/dev/null || fail "memsim run $t"
		# the forward: from its first allocation of stats bytes, each
		# allocation and free of at least that many bytes
		awk -F, -v s=$stats '
		$3 == "alloc" && $8 == "compiled flex_attention" && $5 >= s {
			on = 1 }
		$3 == "alloc" && $8 ~ /^backward/ { exit }
		on && $3 == "alloc" && $8 ~ /autotune L2/ { print $8; next }
		on && $3 == "alloc" && $7 == "temporary" { next }
		on && $3 == "alloc" && $5 >= s { a[$4] = $5; print "a", $5 }
		on && $3 == "free_completed" && ($4 in a) { print "f", a[$4] }
		' "$tmp/$t.csv" | tr '\n' ' ' >"$tmp/$t.fwd"
		want="a $stats a $stats a $o f $stats "
		[ "$(cat "$tmp/$t.fwd")" = "$want" ] ||
			fail "$t: forward '$(cat "$tmp/$t.fwd")', want '$want'"
		# the backward, from its first allocation of stats bytes (after
		# the engine's contiguous copy of the output's gradient) to the
		# first free of the graph's inputs
		awk -F, -v s=$stats '
		$3 == "alloc" && $8 == "backward CompiledFunctionBackward" &&
			$5 == s { on = 1 }
		on && $3 == "alloc" && $8 ~ /autotune L2/ { print $8; next }
		on && $3 == "alloc" && $7 == "temporary" { next }
		on && $3 == "alloc" && $5 >= s { a[$4] = $5; print "a", $5 }
		on && $3 == "free_completed" && ($4 in a) { print "f", a[$4]; exit }
		' "$tmp/$t.csv" | tr '\n' ' ' >"$tmp/$t.bwd"
		# fp32's delta: its copy goes to the host at the first
		# configuration timed, beside the first's flush buffer at the
		# second (the budget is taken for each): two flushes
		f="triton autotune L2 flush"
		[ $d = fp32 ] && f="$f $f"
		want="a $stats $f a $o a $o a $o f $stats "
		[ "$(cat "$tmp/$t.bwd")" = "$want" ] ||
			fail "$t: backward '$(cat "$tmp/$t.bwd")', want '$want'"
	done
done

# create_block_mask(_compile=True) at each step (tests/recorder/
# flex_blockmask.py): PyTorch calls torch.compile(create_block_mask) each
# time, and Dynamo compiles it once, as the "inductor" backend is one
# callable; the recorder made a backend a call, Dynamo compiled again
# until its recompile_limit and ran the function eagerly (its mask
# materialized: 679577600 bytes allocated).  H200 (PyTorch 2.11, a cold
# Inductor cache, 4 December 2026): 83954688 allocated, 85983232
# reserved; recorded 88148992 (an autotuning clone of the flex backward
# more; its flush buffers' order differs, and reserved with it).
$MEMSIM record -o "$tmp/bm.csv" -- "$PY" "$SRC/recorder/flex_blockmask.py" \
	>/dev/null 2>"$tmp/err" || fail "block mask: $(tail -3 "$tmp/err")"
grep -q "recompile_limit" "$tmp/err" && fail "block mask: compiled again: $(grep -m1 recompile_limit "$tmp/err")"
$MEMSIM run --json "$tmp/bm.csv" >"$tmp/bm.json" || fail "block mask: run"
a=$(key allocated_bytes.all.peak "$tmp/bm.json")
[ "${a:-0}" -gt 0 ] && [ "$a" -le $((83954688 * 106 / 100)) ] ||
	fail "block mask: allocated $a, the H200 83954688"
finish recorder_flex.sh
