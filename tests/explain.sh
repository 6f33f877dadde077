#!/bin/sh
# memsim explain and memsim summary from the command line: the summary
# table byte for byte as PyTorch's memory_summary() formats the same
# statistics (tests/data/explain/*.summary.txt, made by torch_summary.py),
# tags through convert, the OOM diagnosis, warnings.
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

gpt2="$DATA/traces/gpt2_fp32.csv"
$MEMSIM summary "$gpt2" >"$tmp/s.txt" || fail "summary"
cmp -s "$tmp/s.txt" "$DATA/explain/gpt2_fp32.summary.txt" ||
	fail "summary differs from PyTorch's layout"
$MEMSIM summary --abbreviated --cap 14000000000 "$gpt2" >"$tmp/s2.txt"
cmp -s "$tmp/s2.txt" "$DATA/explain/gpt2_fp32.cap.summary.txt" ||
	fail "summary --abbreviated at an OOM"

# Tags survive csv -> csv; a pickle's frames become the two columns.
$MEMSIM convert "$DATA/explain/tagged.csv" "$tmp/t.csv" >/dev/null
cmp -s "$tmp/t.csv" "$DATA/explain/tagged.csv" || fail "convert: tags"
$MEMSIM convert "$DATA/pickles/resnet50_amp.frames.pickle" "$tmp/r.csv" >/dev/null
head -1 "$tmp/r.csv" | grep -q ',category,site$' || fail "convert: frames"
grep -q ',alloc,.*,parameter,.*capture.py:122 w_resnet50_amp$' "$tmp/r.csv" ||
	fail "convert: a parameter's site"
$MEMSIM convert "$gpt2" "$tmp/g.csv" >/dev/null
head -1 "$tmp/g.csv" | grep -q ',stream$' || fail "convert: untagged header"
$MEMSIM explain "$tmp/r.csv" --no-alternatives --json >"$tmp/r.json"
$MEMSIM explain "$DATA/pickles/resnet50_amp.frames.pickle" --json >"$tmp/p.json"
cmp -s "$tmp/r.json" "$tmp/p.json" ||
	[ "$(sed 1,2d "$tmp/r.json")" = "$(sed 1,2d "$tmp/p.json")" ] ||
	fail "explain: the converted CSV and the pickle differ"

# The OOM: PyTorch's words, then the replays.
out=$($MEMSIM explain --cap 40MiB "$DATA/explain/oom.csv")
echo "$out" | grep -q "^  CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 139.80 GiB" ||
	fail "explain: OOM message"
echo "$out" | grep -q "smallest cap it fits under  *44.00 MiB (46137344 bytes" ||
	fail "explain: smallest cap"
$MEMSIM explain --json --cap 40MiB "$DATA/explain/oom.csv" |
	grep -q '"oom_request": 3' || fail "explain --json: oom_request"

# run --explain explains the setting the run replayed: a recording's own
# allocator settings (expandable_segments:True) and its rows, so the peak
# it takes apart is the run's peak.
snap="$DATA/snapshots/h200_expandable.pickle"
$MEMSIM run --recording --explain "$snap" >"$tmp/rx.txt" 2>&1 ||
	fail "run --recording --explain: $(cat "$tmp/rx.txt")"
[ "$(grep -c '^policy     pytorch expandable_segments:True$' "$tmp/rx.txt")" = 2 ] ||
	fail "run --explain: not the snapshot's settings: $(grep '^policy' "$tmp/rx.txt")"
peak=$($MEMSIM run --recording --json "$snap" |
	sed -n 's/^  "reserved_bytes.all.peak": \([0-9]*\),$/\1/p')
grep -q "^At peak reserved, .* ($peak bytes)" "$tmp/rx.txt" ||
	fail "run --explain: peak is not the run's $peak: $(grep '^At peak' "$tmp/rx.txt")"

# Settings that cannot act warn on stderr; --quiet silences them.
$MEMSIM explain -c garbage_collection_threshold:0.6 "$DATA/explain/tagged.csv" \
	2>"$tmp/err" >/dev/null
grep -q "warning: pytorch: garbage_collection_threshold:0.6 does nothing without a cap" \
	"$tmp/err" || fail "warning: gc without a cap"
$MEMSIM explain -q -c garbage_collection_threshold:0.6 "$DATA/explain/tagged.csv" \
	2>"$tmp/err" >/dev/null
[ -s "$tmp/err" ] && fail "--quiet"
$MEMSIM run -c garbage_collection_threshold:0.6 "$DATA/explain/tagged.csv" \
	2>"$tmp/err" >/dev/null
grep -q "does nothing without a cap" "$tmp/err" || fail "run: gc warning"

# The shared workloads recorded again on the H200 with the real
# memory_summary() at the snapshot (tests/data/explain/shared/README).
for w in bert_infer_varlen resnet50_amp gpt2_fp32 train_eval_emptycache \
	prefetch_2stream gpt2_varlen; do
	$MEMSIM summary --recording "$DATA/explain/shared/$w.msimtr" \
		>"$tmp/$w.txt" || fail "summary --recording $w"
	cmp -s "$tmp/$w.txt" "$DATA/explain/shared/$w.summary.txt" ||
		fail "summary of $w differs from the real memory_summary()"
done

# A real H200 run (tests/data/explain/h200/, validate/device/summary_probe.py,
# torch 2.11): memory_summary() at the end, byte for byte, from the
# snapshot replayed at its recorded addresses; and PyTorch's own
# OutOfMemoryError text for the recorded OOM under the same fraction, the
# context bytes measured in that run given: equal but for the process's
# memory in use, which nvidia-smi's driver figures decide.
h200="$DATA/explain/h200"
$MEMSIM summary --addresses trace "$h200/end.pickle" >"$tmp/h.txt" ||
	fail "summary of the H200 snapshot"
cmp -s "$tmp/h.txt" "$h200/summary.txt" ||
	fail "summary differs from the real memory_summary()"
ctx=$(sed -n 's/.* context \([0-9]*\)$/\1/p' "$h200/context.txt")
$MEMSIM explain --addresses trace --fraction 0.02 --context-bytes "$ctx" \
	--no-alternatives "$h200/oom.pickle" >"$tmp/h.out" ||
	fail "explain of the H200 OOM"
grep -q '^Out of memory at request 487, as recorded' "$tmp/h.out" ||
	fail "explain: the recorded OOM not found"
nomem() { sed 's/this process has [0-9.]* [KMG]*i*B memory in use/this process has X memory in use/'; }
grep '^  CUDA out of memory' "$tmp/h.out" | sed 's/^  //' | nomem >"$tmp/h.msg"
nomem <"$h200/oom.txt" | cmp -s - "$tmp/h.msg" ||
	fail "explain: the OOM message differs from PyTorch's"
# stacks="all" snapshots interleave C++ frames: sites are Python lines,
# and backward's allocations (C++ frames only) are gradients.
grep -q '??:0' "$tmp/h.out" && fail "explain: a C++ frame as a call site"
grep -q '^    gradient ' "$tmp/h.out" || fail "explain: no gradients found"

# Bad input: one line naming the file, line and reason.
printf 'action,addr,size,category\nalloc,4096,10,weights\n' >"$tmp/bad.csv"
$MEMSIM explain "$tmp/bad.csv" 2>"$tmp/err" >/dev/null && fail "bad category accepted"
grep -q "bad.csv:2: unknown category 'weights'" "$tmp/err" || fail "bad category message"
$MEMSIM explain --top 0 "$gpt2" 2>/dev/null && fail "--top 0 accepted"

[ "$fails" -eq 0 ] && echo "explain: all passed"
exit "$fails"
