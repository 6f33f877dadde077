#!/bin/sh
# memsim record --fake of jagged nested tensors (torch.nested.nested_tensor
# with layout=torch.jagged): the ragged size is a nested int of the
# offsets, which FakeTensor asks of a ShapeEnv the recorder's mode has not
# (it stopped: "self.shape_env must not be None"); the subclass's ops went
# round the recorder's mode forever (RecursionError); their attention asked
# torch.backends.cuda's can_use_*_attention, which a CPU build answers
# False (the math path's strided nested tensor has no fake kernel).  Now a
# fake gets an eager nested int, the subclass runs its own ops on its fake
# values, and the jagged attention takes the backend the device would
# (fake.py, _patch_nested_int, _patch_jagged_sdpa).
# tests/recorder/jagged_attn.py against its H200 run (torch 2.11.0+cu130,
# 2026-12-02, the allocator's history, tests/corpus/snapdiff.py): the
# fp16 forward and the start of its backward, the first 58 requests, are
# the real ones but for the 15th and 16th, the offsets' cumsum's CUB
# storage (1279 bytes on the H200, 1023 by kernels.py's rule, measured on
# other scans).  The rest differs only in the order of a few frees at the
# script's `del`.  Needs PyTorch; skips (77) without.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
script=${MSIM_TESTDATA:-tests/data}/../recorder/jagged_attn.py
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/j.csv" -- "$PY" "$script") \
	>"$tmp/err" 2>&1 || { fail "record: $(tail -3 "$tmp/err")"; finish recorder_nested.sh; }
grep -q "torch.float32 done" "$tmp/err" || fail "the script did not run to its end"
awk -F, 'NR > 1 && $3 == "alloc" { print "+" $5 } NR > 1 && $3 == "free_completed" { print "-" $5 }' \
	"$tmp/j.csv" | sed -n '1,14p;17,58p' | tr '\n' ' ' >"$tmp/got"
# the H200's requests 1-14 and 17-58
real="+393216 +1536 +131072 +512 +18944 +61440 +32768 +4608 +102400 +39424 +259584 +8 +48 +48 \
-48 +56 -48 -8 -39424 -102400 -4608 -32768 -61440 -18944 +778752 +33554432 +1048576 +28 +28 +259584 \
+16224 +16 +8 +259584 +519168 +519168 +4 -519168 +4 +519168 +519168 +519168 +519168 -519168 -519168 \
-519168 -519168 +259584 -519168 +259584 +33554432 +131072 +512 -259584 +259584 +259584 "
[ "$(cat "$tmp/got")" = "$real" ] ||
	fail "requests differ from the H200's:
  got  $(cat "$tmp/got")
  real $real"
# and the whole run's peaks are the H200's: the varlen kernels' backward
# temporaries (mha_varlen_bwd's softmax_d and dq_accum over total + 128
# rows a sequence; the memory-efficient kernel's workspace over the
# sequences and the longest one), no philox seed or grad_bias blocks
$MEMSIM run --json "$tmp/j.csv" >"$tmp/j.json" || fail "memsim run"
got="$(key allocated_bytes.all.peak "$tmp/j.json") $(key reserved_bytes.all.peak "$tmp/j.json")"
[ "$got" = "77875712 96468992" ] ||
	fail "peaks $got, the H200's 77875712 96468992"
finish recorder_nested.sh
