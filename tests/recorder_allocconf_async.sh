#!/bin/sh
# A recording made under PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
# replays under the cuda-async policy when --policy is not given: PyTorch
# reads the backend once, when the allocator starts
# (c10/cuda/CUDAAllocatorConfig.cpp, parseAllocatorConfig: key "backend",
# value "native" or "cudaMallocAsync"), and then allocates through
# CUDAMallocAsyncAllocator.cpp alone, where the native allocator's
# rounding, splitting and garbage collection do not apply
# (docs/cuda-async.md).  Before, `memsim run` replayed such a recording
# under the native allocator with its defaults and only noted
# "backend: cudaMallocAsync is not this policy" (NVIDIA
# DeepLearningExamples' MoFlow train.py --cuda_graph and transformers'
# run_generation.py, run as users do with the variable set, were predicted
# as native runs).  --policy names the policy still; --defaults drops the
# recording's settings.  Needs Python 3 and PyTorch; skips (77) without.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

rec() { # NAME CONF: record allocconf.py (12 MiB, freed, 20 and 3 MiB)
	n=$1
	env PYTORCH_CUDA_ALLOC_CONF="$2" $MEMSIM record -o "$tmp/$n.csv" -- "$PY" \
		"$SRC/recorder/allocconf.py" plain >"$tmp/$n.out" 2>"$tmp/$n.err" ||
		{ fail "record $n: $(tail -3 "$tmp/$n.err")"; return 1; }
}

for c in "backend:cudaMallocAsync" "expandable_segments:True, backend: cudaMallocAsync"; do
	rec async "$c" || exit 1
	$MEMSIM run "$tmp/async.csv" >"$tmp/async.txt" || fail "run '$c'"
	grep -q '^policy     cuda-async' "$tmp/async.txt" ||
		fail "'$c': policy $(grep '^policy' "$tmp/async.txt")"
	grep -q '^settings   the recording.s own ".*": policy cuda-async, the native allocator.s settings do not apply (--policy overrides, --defaults drops them)$' "$tmp/async.txt" ||
		fail "'$c': settings line $(grep '^settings' "$tmp/async.txt")"
	own=$(run_peaks "$tmp/async.csv")
	ca=$(run_peaks "$tmp/async.csv" --policy cuda-async)
	[ "$own" = "$ca" ] || fail "'$c': replayed to $own, --policy cuda-async $ca"
	# cudaMallocAsync counts the bytes asked (23 MiB at the peak), the
	# native allocator its 512-byte blocks and 20 MiB segments
	[ "${own% *}" = 24117248 ] || fail "'$c': allocated ${own% *}"
	nat=$($MEMSIM run --policy pytorch "$tmp/async.csv") || fail "run --policy pytorch"
	echo "$nat" | grep -q '^policy     pytorch' || fail "'$c': --policy pytorch not kept"
	echo "$nat" | grep -q 'backend: cudaMallocAsync is not this policy' ||
		fail "'$c': --policy pytorch does not say the backend is not applied"
	$MEMSIM run --defaults "$tmp/async.csv" | grep -q '^policy     pytorch' ||
		fail "'$c': --defaults does not drop the settings"
done
# the native backend named, or none: the native allocator as before
rec native "backend:native" || exit 1
$MEMSIM run "$tmp/native.csv" | grep -q '^policy     pytorch' ||
	fail "backend:native: $($MEMSIM run "$tmp/native.csv" | grep '^policy')"
finish recorder_allocconf_async
