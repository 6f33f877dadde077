#!/bin/sh
# Two real processes on one H200 (tests/data/together/h200/measured.tsv):
# each fits alone; together B's cudaMalloc at its request 58 failed.
# `memsim run --capacity BYTES A B` must predict that request, from the
# traces each process gave alone (B.alone.csv) and from those of the real
# run (B.csv ends with the oom row), where BYTES is what the two allocators
# could share: cudaMemGetInfo's free bytes once both contexts existed, or
# the total less one context each (--context-bytes: total - free with one
# context).  Without the contexts the prediction is one request late.
# Run by `make check` with MEMSIM and MSIM_TESTDATA.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}/together/h200
tmp=$(mktemp -d /tmp/memsim-together-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
get() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$DATA/measured.tsv"; }
total=$(get total)
one=$(get free_one_context)
both=$(get free_two_contexts)
ctx=$((total - one))
# The real OOM: B's requests (allocs, frees, the oom) before its oom row.
real=$(awk -F, 'NR > 1 && $3 == "oom" { print n; exit }
	NR > 1 && ($3 == "alloc" || $3 == "free_completed") { n++ }' \
	"$DATA/B.csv")
[ "$real" = 58 ] || fail "B.csv: its oom row at request '$real', not 58"

# oom LINE: "P R" for "OOM  process P at its request R", or "none".
oom() { sed -n 's/^OOM *process \([0-9]*\) at its request \([0-9]*\):.*/\1 \2/p' "$1" |
	head -1 | grep . || echo none; }

# Each fits alone, in what the two could share.
for t in A.csv B.alone.csv; do
	$MEMSIM run --capacity "$both" --json "$DATA/$t" >"$tmp/one.json" ||
		fail "$t alone: run"
	grep -q '"oom_request": -1' "$tmp/one.json" || fail "$t alone: OOM"
done
# Together, from the traces recorded alone.
$MEMSIM run --capacity "$both" "$DATA/A.csv" "$DATA/B.alone.csv" \
	>"$tmp/free.txt" || fail "run --capacity $both"
[ "$(oom "$tmp/free.txt")" = "2 $real" ] ||
	fail "--capacity $both: $(oom "$tmp/free.txt"), real 2 $real"
grep -q '^OOM .*the GPU was full' "$tmp/free.txt" ||
	fail "--capacity $both: the OOM's cause is not the GPU"
$MEMSIM run --capacity h200 --context-bytes "$ctx" "$DATA/A.csv" \
	"$DATA/B.alone.csv" >"$tmp/ctx.txt" || fail "run --context-bytes"
[ "$(oom "$tmp/ctx.txt")" = "2 $real" ] ||
	fail "--context-bytes $ctx: $(oom "$tmp/ctx.txt"), real 2 $real"
grep -q "^contexts   2 x .*($ctx bytes)" "$tmp/ctx.txt" ||
	fail "--context-bytes: no contexts line"
$MEMSIM run --capacity h200 "$DATA/A.csv" "$DATA/B.alone.csv" \
	>"$tmp/none.txt" || fail "run --capacity h200"
[ "$(oom "$tmp/none.txt")" != "2 $real" ] ||
	fail "--capacity h200 without contexts predicts the OOM too"
# The real run's own traces: B's recorded OOM is reproduced.
$MEMSIM run --capacity "$both" "$DATA/A.csv" "$DATA/B.csv" >"$tmp/rec.txt" ||
	fail "run of the real run's traces"
grep -q '^recorded OOMs  1 reproduced, 0 not' "$tmp/rec.txt" ||
	fail "the real run's traces: B's OOM not reproduced"
# Contexts that fill the GPU are refused.
if $MEMSIM run --capacity 1GiB --context-bytes 600MiB "$DATA/A.csv" \
	"$DATA/B.csv" >/dev/null 2>"$tmp/err"; then
	fail "contexts larger than the GPU accepted"
fi
grep -q 'context' "$tmp/err" || fail "no reason given: $(cat "$tmp/err")"
# One process: its context comes off the capacity as well.  B alone,
# with A's context and its 80 GiB segment added to its own context, is
# B beside A.
big=$((2 * ctx + 85899345920))
$MEMSIM run --capacity h200 --context-bytes "$big" "$DATA/B.alone.csv" \
	>"$tmp/lone.txt" 2>&1
grep -q "request $real" "$tmp/lone.txt" ||
	fail "lone run --context-bytes $big: $(grep -i oom "$tmp/lone.txt")"
# A fraction stays of the whole device (set_per_process_memory_fraction):
# 0.4012 of the H200 holds B's 56th GiB block, 0.4012 of what one
# context leaves does not.
frac=$($MEMSIM run --capacity h200 --fraction 0.4012 --context-bytes "$ctx" \
	"$DATA/B.alone.csv" | grep '^OOM')
bytes=$($MEMSIM run --capacity h200 --cap "$((total * 4012 / 10000))" \
	"$DATA/B.alone.csv" | grep '^OOM')
[ "$frac" = "OOM        at request 56" ] && [ "$frac" = "$bytes" ] ||
	fail "--fraction with --context-bytes: '$frac', as a cap: '$bytes'"
# Its OOM message as PyTorch words it (run --explain): the total is the
# whole device and the free bytes what B's reserved segments (its
# segment_alloc rows before the failing request) and the context leave.
held=$(awk -F, -v n="$real" 'NR > 1 && $3 == "segment_alloc" && k < n { s += $5 }
	NR > 1 && $3 == "alloc" { k++ } END { printf "%.0f", s }' "$DATA/B.alone.csv")
want=$(awk -v t="$total" -v h="$held" -v c="$big" 'BEGIN {
	printf "total capacity of %.2f GiB of which %.2f MiB is free",
	t / 2^30, (t - h - c) / 2^20 }')
$MEMSIM run --explain --capacity h200 --context-bytes "$big" \
	"$DATA/B.alone.csv" >"$tmp/lone.txt" 2>&1
grep -q "$want" "$tmp/lone.txt" ||
	fail "lone run --explain: '$want' not in $(grep -o 'total capacity.*free' "$tmp/lone.txt")"
# The context is part of the setting: a row of its own, stored with the
# whole device's capacity, replaced when run again.
for c in 0 "$ctx" "$ctx"; do
	$MEMSIM run --db "$tmp/ctx.db" --capacity h200 --context-bytes "$c" \
		"$DATA/B.alone.csv" | sed -n 's/^stored *run \([0-9]*\).*/\1/p'
done | tr '\n' ' ' >"$tmp/ids"
[ "$(cat "$tmp/ids")" = "1 2 2 " ] || fail "run --db with contexts: runs $(cat "$tmp/ids")"
$MEMSIM report --db "$tmp/ctx.db" --run 2 --json >"$tmp/r2.json"
for kv in "\"setting_key\": \"[^\"]*|context=$ctx\"" "\"context_bytes\": $ctx" \
	"\"capacity_bytes\": $total"; do
	grep -q "$kv" "$tmp/r2.json" || fail "stored lone context: no $kv"
done
if $MEMSIM run --capacity 1GiB --context-bytes 1GiB "$DATA/B.alone.csv" \
	>/dev/null 2>"$tmp/err"; then
	fail "a lone context as large as the GPU accepted"
fi
grep -q 'context' "$tmp/err" || fail "no reason given: $(cat "$tmp/err")"
[ "$fails" -eq 0 ] || exit 1
echo "together: B's OOM at its request $real predicted ($both bytes shared; h200 less 2 x $ctx)"
