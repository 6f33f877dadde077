#!/bin/sh
# torch.compile under memsim record --fake: the end of a backward that
# computes embedding gradients, as Inductor runs it (compiled.py,
# docs/recording-compile.md; what the H200's generated code and snapshot
# of corpus program nanogpt-bench-compile show).  tests/recorder/
# compile_embed.py: token and position embeddings (512 x 64, 32 x 64,
# fp32), the head tied to the token embedding, logits returned beside the
# loss.  Each embedding gradient is a scatter into a buffer of its own
# (embedding_dense_backward's zeros, realized), made before its fill
# kernel, which Triton tunes there (an L2-flush block right after the
# buffer); the position gradient's scatter is a kernel of its own and
# mutates that buffer, so each timed run of its benchmark copies it
# (maybe_clone_args: a copy before the flush block and one inside it);
# the zero gradient the engine gives the backward for the logits lives
# until the backward returns, after the gradients' buffers are freed.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/e.csv" -- "$PY" "$SRC/recorder/compile_embed.py" \
	2>"$tmp/err" >/dev/null || fail "record: $(tail -3 "$tmp/err")"
grep -q "(compile:inductor 1)$" "$tmp/err" || fail "assumptions: $(tail -1 "$tmp/err")"
# rows: index action addr size site, from the first backward row on
awk -F, 'NR > 1 && ($3 == "alloc" || $3 == "free_completed") {
	if ($8 ~ /^backward/) b = 1
	if (b) print NR, $3, $4, $5, $8 }' "$tmp/e.csv" >"$tmp/rows"
# what follows the first alloc of SIZE bytes in the backward: the sizes
# and sites of the next N allocs
after() {
	awk -v s="$1" -v n="$2" '
		!f && $2 == "alloc" && $4 == s && $5 ~ /^backward/ { f = 1; next }
		f && $2 == "alloc" && c < n { printf "%s %s;", $4, $5 " " $6 " " $7 " " $8; c++ }' "$tmp/rows"
}
fl="62914560 triton autotune L2"
cl="triton autotune clone"
# the token gradient (512 x 64 fp32): its buffer, then its fill kernel's
# flush
got=$(after 131072 1)
[ "$got" = "$fl flush;" ] || fail "token gradient: after its buffer: $got"
# the position gradient (32 x 64): its buffer, its fill's flush, then its
# scatter's benchmark: a copy of the buffer, the flush, a copy
got=$(after 8192 4)
[ "$got" = "$fl flush;$fl flush;" ] && fail "position gradient: no copy of its buffer while its scatter is tuned"
[ "$got" = "$fl flush;8192 $cl ;$fl flush;8192 $cl ;" ] ||
	fail "position gradient: after its buffer: $got"
# the logits' zero gradient (4 x 32 x 512 fp32), the backward's first
# large block, freed after the token gradient's buffer
awk '$4 == 262144 && $2 == "alloc" && !z { z = $3 }
	$4 == 131072 && $2 == "alloc" && $5 ~ /^backward/ && !t { t = $3 }
	$2 == "free_completed" && $3 == t { tf = NR }
	$2 == "free_completed" && $3 == z && !zf { zf = NR }
	END { exit !(z && t && tf && zf > tf) }' "$tmp/rows" ||
	fail "the logits' gradient is freed before the backward's end"
finish recorder_compile_tune.sh
