#!/bin/sh
# Higher-order operators under memsim record --fake: the recorder's fake
# mode, a subclass of FakeTensorMode, takes FakeTensorMode's rule for each
# (fake.py, share_hop_rules).  tests/recorder/fsdp2_init.py initializes
# FSDP2's sharded parameters on DTensors (meta device, to_empty, init),
# whose random ops run through run_dtensor_rng_op: the recording stopped
# there ("no rule registered for HigherOrderOperator run_dtensor_rng_op").
# The figures are FSDP2's shards, computed here from the model's shapes.
# Needs PyTorch; skips (77) without.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/fsdp2_init.py
# sizes FILE LINE: the sizes of the alloc rows made at the script's LINE,
# sorted
sizes() { awk -F, -v s="fsdp2_init.py:$2 " \
	'$3 == "alloc" && index($8, s) { print $5 }' "$1" | sort -n | tr '\n' ' '; }
line() { grep -n "$1" "$script" | sed -n 's/:.*//p' | head -1; }
noise=$(line 'noise = torch.rand_like')
# shards FILE: the sizes of the alloc rows before the first one that is
# not a parameter's, sorted: to_empty's local shards and FSDP2's padded
# copies, which come before anything else the script allocates.  They
# are the sharded DTensor parameters' local tensors, category parameter
# (fake.py, Recorder.relabel; they were "other", at to_empty's line).
shards() { awk -F, '$3 == "alloc" { if ($7 != "parameter") exit; print $5 }' \
	"$1" | sort -n | tr '\n' ' '; }
# record NAME N R ARGS...
record() {
	t=$1 w=$2 r=$3; shift 3
	$MEMSIM record -o "$tmp/$t.csv" --world-size "$w" --rank "$r" -- \
		"$PY" "$script" "$@" 2>"$tmp/$t.err" ||
		{ fail "record $t: $(tail -3 "$tmp/$t.err")"; return 1; }
	$MEMSIM run "$tmp/$t.csv" >/dev/null || fail "memsim run $t"
}
# Linear(256, 256) twice and Linear(256, 16), each weight and bias
# chunked on dim 0: rank R of N owns min(ceil(rows / N), rows - R x
# ceil(rows / N)) rows, FSDP2 keeps ceil(rows / N) (padded,
# FSDPParam.reset_sharded_param).  to_empty makes each local shard
# (empty_like of the DTensor), and where it is shorter than the padded
# size FSDP2 copies it into a padded one.  torch.rand_like of the first
# weight (a DTensor) allocates this rank's shard of it, unpadded.
for wr in 2:0 3:2; do
	N=${wr%:*} R=${wr#*:} t=linear.w$N.r$R
	record $t $N $R linear || continue
	want=
	for rc in 256:256 256:1 256:256 256:1 16:256 16:1; do
		rows=${rc%:*} cols=${rc#*:}
		pad=$(( (rows + N - 1) / N )) own=$(( rows - R * pad ))
		[ $own -gt $pad ] && own=$pad
		want="$want $((pad * cols * 4))"
		[ $own -lt $pad ] && want="$want $((own * cols * 4))"
	done
	want=$(echo $want | tr ' ' '\n' | sort -n | tr '\n' ' ')
	got=$(shards "$tmp/$t.csv")
	[ "$got" = "$want" ] || fail "$t: to_empty's shards '$got', want '$want'"
	pad=$(( (256 + N - 1) / N )) own=$(( 256 - R * pad ))
	[ $own -gt $pad ] && own=$pad
	got=$(sizes "$tmp/$t.csv" $noise)
	[ "$got" = "$((own * 256 * 4)) " ] ||
		fail "$t: rand_like of a sharded weight '$got', want $((own * 256 * 4))"
done
# A small Transformer (embedding 512 x 64, two blocks, norm, output
# 512 x 64), fully_shard per block and on the root, as pytorch/examples'
# FSDP2 example does; mp: MixedPrecisionPolicy(bf16, fp32 reduction).
# At N = 2 no parameter needs padding: 24 shards of half of each, 165120
# parameters in all; each block's all-gather output holds its 49728
# parameters, the root's 65664 (embedding, norm, output layer), in the
# parameter dtype (fp32 or bf16), on the all-gather stream.
block=$((2 * 64 + 192 * 64 + 64 * 64 + 2 * 64 + 256 * 64 + 256 + 64 * 256 + 64))
root=$((512 * 64 + 2 * 64 + 512 * 64))
total=$((2 * block + root))
for m in transformer:4 transformer_mp:2; do
	t=${m%:*} e=${m#*:}
	record $t 2 0 transformer $([ $t = transformer_mp ] && echo mp) || continue
	got=$(shards "$tmp/$t.csv")
	n=$(echo $got | wc -w)
	s=$(echo $got | tr ' ' '\n' | awk '{ s += $1 } END { print s + 0 }')
	[ "$n" -eq 24 ] && [ "$s" -eq $((total / 2 * 4)) ] ||
		fail "$t: $n shards of $s bytes, want 24 of $((total / 2 * 4))"
	ag() { awk -F, -v s="$1" -v site="$2" '$3 == "alloc" && $5 == s &&
		$6 != 0 && $7 == "activation" && $8 == site' "$tmp/$t.csv" | wc -l; }
	[ "$(ag $((block * e)) FSDPTransformer.blocks.0)" -eq 1 ] &&
		[ "$(ag $((block * e)) FSDPTransformer.blocks.1)" -eq 1 ] &&
		[ "$(ag $((root * e)) FSDPTransformer)" -eq 1 ] ||
		fail "$t: all-gather outputs of $((block * e)) and $((root * e)) bytes"
done
# torch.compile(flex_attention) (titans-pytorch): Dynamo traces the
# operator with the recorder's mode current, which found no rule
# ("no rule registered for HigherOrderOperator flex_attention").  The
# compiled program writes the output (2 x 4 x 256 x 64 fp32), the
# log-sum-exp and the max scores (2 x 4 x 256 fp32 each) of Inductor's
# flex-attention template (tests/recorder_flex.sh), and never the 2 x 4 x 256 x 256 scores that the eager sdpa_dense makes
# (tests/recorder_autograd_thread.sh).
"$PY" -c "import torch.nn.attention.flex_attention" 2>/dev/null || {
	echo "no flex_attention in this PyTorch: its part skipped"
	finish recorder_hop.sh; exit 0; }
cat >"$tmp/flex.py" <<'PY'
import torch
from torch.nn.attention.flex_attention import flex_attention
flex = torch.compile(flex_attention)
q, k, v = (torch.randn(2, 4, 256, 64, device="cuda", requires_grad=True)
           for _ in range(3))
out = flex(q, k, v, score_mod=lambda s, b, h, m, n: s + (m - n))
out.sum().backward()
print("flex", tuple(out.shape), tuple(q.grad.shape))
PY
if (cd "$tmp" && $MEMSIM record -o "$tmp/flex.csv" -- "$PY" flex.py) \
	>"$tmp/flex.err" 2>&1; then
	grep -qxF "flex (2, 4, 256, 64) (2, 4, 256, 64)" "$tmp/flex.err" ||
		fail "compiled flex_attention: no result"
	c() { awk -F, -v s="$1" '$3 == "alloc" && $5 == s &&
		$8 == "compiled flex_attention"' "$tmp/flex.csv" | wc -l; }
	[ "$(c 524288)" -eq 1 ] && [ "$(c 8192)" -eq 2 ] ||
		fail "compiled flex_attention: output, log-sum-exp, max scores"
	[ "$(awk -F, '$3 == "alloc" && $5 == 2097152' "$tmp/flex.csv" | wc -l)" -eq 0 ] ||
		fail "compiled flex_attention: scores materialized"
else
	fail "record compiled flex_attention: $(tail -3 "$tmp/flex.err")"
fi
finish recorder_hop.sh
