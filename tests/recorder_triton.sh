#!/bin/sh
# A program's own Triton kernels under --fake (userkernels.py): launches
# skipped (assumption triton:kernel-not-run, naming the launch's line),
# triton.testing.do_bench and the autotuner's benchmark with the driver's
# 256 MiB L2 flush buffer and the restore_value copies, a compile ahead
# of the launch refused in one line.  tests/recorder/triton_user.py on
# the H200 (PyTorch 2.11, Triton 3.6.0, 4 December 2026): plain (a
# kernel in an autograd.Function, AdamW) 168838656 allocated, 207618048
# reserved; tuned (two configurations, restore_value) 671088640 /
# 671088640; bench 335544320 / 335544320; benchgrad (a backward timed
# with grad_to_none: the gradient lives through the untimed calls)
# 671089664 / 673185792 (603980800 when the recording dropped it before
# its second call); compiled (the kernel inside a torch.compile'd
# function) 268435456 / 333447168 (recorded 331350016 reserved; the
# kernel's arguments had no buffers of their own: 201326592 allocated);
# device (Triton's driver asked for the torch device and the SM count)
# 17301504 / 20971520.  The recorder stopped at the first launch
# ("libcuda.so cannot found").  Needs Python 3, PyTorch and
# Triton (installed beside PyTorch's CPU build it imports and compiles
# nothing); skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import triton' 2>/dev/null || { echo "no Triton: skipped"; exit 77; }
check() { # MODE ALLOCATED RESERVED
	$MEMSIM record -o "$tmp/$1.csv" -- "$PY" "$SRC/recorder/triton_user.py" \
		$1 >/dev/null 2>"$tmp/$1.err" || { fail "record $1: $(tail -3 "$tmp/$1.err")"; return; }
	$MEMSIM run --json "$tmp/$1.csv" >"$tmp/$1.json" || { fail "run $1"; return; }
	[ "$(key allocated_bytes.all.peak "$tmp/$1.json")" = $2 ] ||
		fail "$1: allocated $(key allocated_bytes.all.peak "$tmp/$1.json"), the H200 $2"
	[ "$(key reserved_bytes.all.peak "$tmp/$1.json")" = $3 ] ||
		fail "$1: reserved $(key reserved_bytes.all.peak "$tmp/$1.json"), the H200 $3"
}
check plain 168838656 207618048
check tuned 671088640 671088640
check bench 335544320 335544320
check benchgrad 671089664 673185792
check compiled 268435456 331350016
check device 17301504 20971520
# Dynamo's analysis of what the kernel writes ran (the compile target
# answered): no "assuming every input is mutated"
grep -q "assuming every input is mutated" "$tmp/compiled.err" &&
	fail "compiled: Dynamo's mutation analysis failed"
# one assumption a kernel, at the program's launch line; one a benchmark
[ "$(grep -c 'assumption,triton:kernel-not-run triton_user.py:[0-9]* =not run$' "$tmp/plain.csv")" = 1 ] ||
	fail "plain: not one triton:kernel-not-run naming the launch"
[ "$(grep -c 'assumption,triton:benchmark-time triton_user.py:[0-9]* =1.0$' "$tmp/tuned.csv")" = 2 ] ||
	fail "tuned: not one triton:benchmark-time a configuration"
# the 256 MiB flush buffer, each configuration's benchmark
[ "$(grep -c ',alloc,[0-9]*,268435456,' "$tmp/tuned.csv")" = 2 ] ||
	fail "tuned: not two flush buffers"
if $MEMSIM record -o "$tmp/w.csv" -- "$PY" "$SRC/recorder/triton_user.py" \
	warmup >/dev/null 2>"$tmp/err"; then
	fail "warmup: recorded"
else
	grep -q 'Triton kernel scale_kernel is compiled ahead of its launch' \
		"$tmp/err" || fail "warmup: $(tail -2 "$tmp/err")"
	[ -e "$tmp/w.csv" ] && fail "warmup: a trace written"
fi
finish recorder_triton
