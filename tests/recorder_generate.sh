#!/bin/sh
# memsim record --fake on generation idioms (tests/recorder/beam_search.py):
# a beam search whose stopping test compares scores with transformers'
# -1e9 "no finished beam" sentinel runs every step to the max length
# (traces/memsim_record/known.py, assumption compare:sentinel), and a cache
# grown from torch.tensor([]) under torch.inference_mode records (it used
# to fail: the fake mode ran aten::to on a real GPU); the temporaries of
# sort, multinomial and of inference-mode linear and convolutions.  Needs Python 3 and
# PyTorch; skips (77) without them.  No transformers: the loops are
# written here as transformers writes them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

$MEMSIM record -o "$tmp/b.csv" -- "$PY" "$SRC/recorder/beam_search.py" \
	2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
grep '^steps\|^keys' "$tmp/err" >"$tmp/out"
printf 'steps 6 shape (8, 16)\nsteps 4 shape (12, 24)\nkeys (3072,)\n' >"$tmp/want"
cmp -s "$tmp/out" "$tmp/want" || fail "steps: $(cat "$tmp/out")"
# One sentinel comparison a step (best > worst, worst the known -1e9 of
# where(finished known False, ..., -1e9)) and one routing (the step's topk
# over the 1000 tokens: its k indices distinct, docs/recording-values.md),
# nothing else assumed.
grep -q "; 20 assumptions (compare:sentinel 10, routing 10)$" "$tmp/err" ||
	fail "assumptions: $(cat "$tmp/err")"
# Each step at line 37: the gathered beams ids[src] (B*4 x len longs),
# the new tokens idx % 1000 (B x 4 longs) and their cat (len + 1):
# 8 x 10..15 x 8 bytes, then 12 x 20..23 x 8.
got=$(awk -F, '$3 == "alloc" && $8 == "beam_search.py:37 beam_search" { printf "%s ", $5 }' "$tmp/b.csv")
want=
for l in 10 11 12 13 14 15; do want="$want$((8 * l * 8)) 64 $((8 * (l + 1) * 8)) "; done
for l in 20 21 22 23; do want="$want$((12 * l * 8)) 96 $((12 * (l + 1) * 8)) "; done
[ "$got" = "$want" ] || fail "beam sizes: $got, want $want"
# torch.tensor([]) allocates nothing; three cats of 1024 halves: 2048,
# 4096 and 6144 bytes, each after its torch.ones (2048).
got=$(awk -F, '$3 == "alloc" && $8 == "beam_search.py:66 <module>" { printf "%s ", $5 }' "$tmp/b.csv")
[ "$got" = "2048 2048 2048 4096 2048 6144 " ] || fail "inference-mode cache: $got"
$MEMSIM run "$tmp/b.csv" >/dev/null || fail "memsim run of the recording"

# The sentinel rule decides comparisons with finite values of magnitude
# 1e9 or more only; x > -inf stays unknown (the .item() assumption False).
cat >"$tmp/sentinel.py" <<'PY'
import torch
x = torch.randn(4, device="cuda")
print("cmp", bool((x > -1e9).all()), bool((x < 1e9).any()),
      bool((x >= -1e10).all()), bool((x > -1e8).all()),
      bool((x > float("-inf")).all()))
PY
$MEMSIM record -o "$tmp/s.csv" -- "$PY" "$tmp/sentinel.py" 2>"$tmp/err" ||
	fail "record sentinel: $(tail -3 "$tmp/err")"
grep -q '^cmp True True True False False$' "$tmp/err" || fail "sentinel: $(cat "$tmp/err")"
grep -q "; 5 assumptions (compare:sentinel 3, item:bool 2)$" "$tmp/err" ||
	fail "sentinel assumptions: $(cat "$tmp/err")"

# Kernels' temporaries (tests/recorder/gen_kernels.py), exact bytes.
# sort of (4, 16000) fp32 (launch_stable_sort_kernel, 4 slices < 128:
# by full sort): two (index, segment) arrays of 64000 x 8 bytes, the keys'
# output (64000 x 4), cub's storage for 4 passes of float keys with int2
# values (256000 + 512000 alternates + 12 look-back tiles of 1 KiB + 4 x
# 2048 histograms + 256 + 255 = 788991, the H200's)
# and for one pass on the segment bits (2048 + 256 + 255); the (8, 4096)
# sort (in place) the index range fillSliceWithIndex makes, an arange of
# 4096 longs (32768).  multinomial's checks (max, <, min, >=, &: 4 1 4 1 1; the
# row sums, == 0, any: 16 4 1) and q (256000).  Under inference_mode:
# Linear's addmm takes the cuBLAS workspace and the cuBLASLt one (1 MiB);
# the fp16 Conv2d(64, 4) on (2, 64, 16, 16): input 65536 + weight and
# output with K padded to 8 (9216 + 8192), and cuDNN's 16 bytes;
# ConvTranspose2d(16, 8, 4, 2, 1) on (2, 16, 8, 8): backward-data's input
# + weight + output, 8192 + 4096 + 4096, and the 16 bytes.
$MEMSIM record -o "$tmp/k.csv" -- "$PY" "$SRC/recorder/gen_kernels.py" \
	2>"$tmp/err" || fail "record kernels: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && ($7 == "temporary" || $8 ~ /^cuBLAS/) { printf "%s:%s ", $8, $5 }' "$tmp/k.csv")
s="sort_cuda_kernel temporaries" m="multinomial temporaries" c="cudnn run_conv_plan workspace"
want="$s:512000 $s:512000 $s:256000 $s:788991 $s:2559 "
for b in 4 1 4 1 1 16 4 1 256000; do want="$want$m:$b "; done
want="$want$s:32768 cuBLAS workspace:33554432 cuBLASLt workspace:1048576 $c:$((65536 + 9216 + 8192 + 16)) $c:$((8192 + 4096 + 4096 + 16)) "
[ "$got" = "$want" ] || fail "kernels: $got, want $want"

# An op with a kernel of its own beside its CompositeImplicitAutograd one
# (silu_backward: math_silu_backward) runs that kernel, outside inference
# mode too: SiLU's backward on (256, 1024) fp32 makes its one gradient
# (1 MiB), not the math version's temporaries.
cat >"$tmp/silu.py" <<'PY'
import torch
x = torch.randn(256, 1024, device="cuda", requires_grad=True)
torch.nn.functional.silu(x).sum().backward()
PY
$MEMSIM record -o "$tmp/silu.csv" -- "$PY" "$tmp/silu.py" 2>"$tmp/err" ||
	fail "record silu: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $8 ~ /SiluBackward0/ { printf "%s ", $5 }' "$tmp/silu.csv")
[ "$got" = "1048576 " ] || fail "silu backward: $got"

finish recorder_generate.sh
