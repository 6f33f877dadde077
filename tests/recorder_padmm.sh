#!/bin/sh
# torch.compile under memsim record --fake: the matmul benchmarks of
# Inductor's pad_mm pass at compile time (compiled.PadBench,
# docs/recording-compile.md), against the real H200 runs of
# tests/recorder/pad_bench.py in tests/data/compile/real.tsv.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
DATA=${MSIM_TESTDATA:-tests/data}/compile
P=$SRC/recorder/pad_bench.py
peaks() { # TRACE -> "allocated reserved" of its replay
	$MEMSIM run --json "$1" >"$tmp/p.json" || { echo "run failed"; return; }
	echo "$(key allocated_bytes.all.peak "$tmp/p.json") $(key reserved_bytes.all.peak "$tmp/p.json")"
}
real() { awk -v n="$1" '$1 == n { print $(NF-1), $NF }' "$DATA/real.tsv"; }
# the sizes of the benchmark's allocations, in the trace's order
bench() { awk -F, '$3 == "alloc" && $8 ~ /^inductor pad_mm benchmark/ { printf "%s ", $5 }' "$1"; }

# float32: the inference graph's addmm (768 x 128 by 128 x 65 plus a
# bias) and the joint graph's weight gradient (65 x 768 by 768 x 128) are
# benchmarked, two assumptions.  Their requests, as the H200 snapshot
# shows them with one timed run a benchmark: the copies of mat1, mat2 and
# the bias, the padded run's bias, the unpadded product, the L2 flush and
# the product again; the padded run (mat2 to 128 x 68, the bias's 3 zeros
# and its cat, the product) before and inside its flush; the gradient's
# copies, its product, its padded mat1 (68 x 768) and product.
$MEMSIM record -o "$tmp/f.csv" -- "$PY" "$P" 2 2>"$tmp/err" ||
	fail "record: $(tail -3 "$tmp/err")"
grep -q "(compile:inductor 1, compile:pad_mm 2)$" "$tmp/err" ||
	fail "assumptions: $(tail -1 "$tmp/err")"
want="393216 33280 260 260 199680 62914560 199680 34816 12 272 208896 62914560 34816 12 272 208896 199680 393216 33280 62914560 33280 208896 34816 62914560 208896 34816 "
[ "$(bench "$tmp/f.csv")" = "$want" ] || fail "float32 benchmark: $(bench "$tmp/f.csv")"
# the warm-up's addmm makes cuBLAS's and cuBLASLt's workspaces, before
# the first flush (the order that sets the reserved peak)
first=$(awk -F, '$3 == "alloc" && ($5 == 62914560 || $8 ~ /workspace$/) { print $8; exit }' "$tmp/f.csv")
[ "$first" = "cuBLAS workspace" ] || fail "first of the workspace and the flush: $first"
# The peaks: the real run's, both.  Before the benchmarks were recorded,
# the LayerNorm kernel's autotuning flush came first, cuBLAS's workspace
# was cut from its freed segment and the next flush took a second one:
# 98337792 / 130023424.
set -- $(peaks "$tmp/f.csv")
[ "$1 $2" = "98781184 100663296" ] || fail "float32 peaks $1 $2"
[ "$1 $2" = "$(real padbench_fp32)" ] || fail "float32 peaks $1 $2, real $(real padbench_fp32)"

# bfloat16 under autocast: the alignment is 8 (65 padded to 72), the
# same requests at half the size; the H200's peaks (reserved was
# 192937984; allocated was 99840 bytes under, the backward's incoming
# 768 x 65 gradient, which the autograd engine holds until the backward
# returns: compiled.py, Program.run).
$MEMSIM record -o "$tmp/b.csv" -- "$PY" "$P" 2 bf16 2>"$tmp/err" ||
	fail "record bf16: $(tail -3 "$tmp/err")"
want="196608 16640 130 130 99840 62914560 99840 18432 14 144 110592 62914560 18432 14 144 110592 99840 196608 16640 62914560 16640 110592 18432 62914560 110592 18432 "
[ "$(bench "$tmp/b.csv")" = "$want" ] || fail "bf16 benchmark: $(bench "$tmp/b.csv")"
set -- $(peaks "$tmp/b.csv") $(real padbench_bf16)
[ "$1 $2" = "131650048 163577856" ] || fail "bf16 peaks $1 $2"
[ "$1 $2" = "$3 $4" ] || fail "bf16 peaks $1 $2, real $3 $4"

# A half-precision matmul of at least 10^10 multiply-adds (a language
# model's head: 8192 x 1024 by 1024 x 50257, bf16): still assumed
# unpadded, but its own assumption names the shape and a note says that
# pad_mm padded such shapes on the H200 (docs/recording-compile.md).
cat >"$tmp/large.py" <<'PY'
import torch
head = torch.compile(torch.nn.Linear(1024, 50257).cuda())
x = torch.randn(8192, 1024, device="cuda")
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
    head(x)
PY
$MEMSIM record -o "$tmp/l.csv" -- "$PY" "$tmp/large.py" 2>"$tmp/err" ||
	fail "record large: $(tail -3 "$tmp/err")"
grep -q "(compile:inductor 1, compile:pad_mm 1, compile:pad_mm-large 1)$" "$tmp/err" ||
	fail "large: $(cat "$tmp/err")"
grep -q ',assumption,compile:pad_mm-large large.py:5 =unpadded 8192x1024x50257 bfloat16$' "$tmp/l.csv" ||
	fail "large assumption: $(grep annotate "$tmp/l.csv")"
grep -q "note: Inductor's pad_mm benchmarks a half-precision matmul" "$tmp/err" ||
	fail "large note: $(cat "$tmp/err")"
grep -q "pad_mm-large" "$tmp/b.csv" && fail "bf16 768 x 128 x 65: large"

# Without shape padding (torch._inductor.config.shape_padding, from
# TORCHINDUCTOR_SHAPE_PADDING) nothing is benchmarked.
TORCHINDUCTOR_SHAPE_PADDING=0 $MEMSIM record -o "$tmp/n.csv" -- "$PY" "$P" 2 \
	2>"$tmp/err" || fail "record without padding: $(tail -3 "$tmp/err")"
grep -q "(compile:inductor 1)$" "$tmp/err" || fail "no padding: $(tail -1 "$tmp/err")"
[ -z "$(bench "$tmp/n.csv")" ] || fail "no padding: benchmarked $(bench "$tmp/n.csv")"
# Nor with torch.compile(options={"shape_padding": False}), which patches
# Inductor's config while it compiles.
$MEMSIM record -o "$tmp/o.csv" -- "$PY" "$P" 2 nopad 2>"$tmp/err" ||
	fail "record nopad: $(tail -3 "$tmp/err")"
grep -q "(compile:inductor 1)$" "$tmp/err" || fail "nopad: $(tail -1 "$tmp/err")"
[ -z "$(bench "$tmp/o.csv")" ] || fail "nopad: benchmarked $(bench "$tmp/o.csv")"
finish recorder_padmm
