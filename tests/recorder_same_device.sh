#!/bin/sh
# memsim record --fake: a CPU tensor among a GPU op's arguments
# (recorder/same_device.py; samedevice.py).  A 0-dim CPU tensor is a
# scalar to the TensorIterator ops and an error to every other CUDA
# kernel, which checks its arguments' devices: the recording prints what
# the H200 printed (tests/data/record/same_device.real.txt: PyTorch 2.11), errors and
# their messages included, under --fake and --values cpu.  Before, the
# fake mode took a 0-dim CPU tensor anywhere: Swin Transformer V2's
# `torch.clamp(scale, max=torch.log(torch.tensor(100.)))` recorded, and
# failed on the GPU.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
P="$SRC/recorder/same_device.py"
want="${MSIM_TESTDATA:-tests/data}/record/same_device.real.txt"
for v in fake cpu; do
	o=
	[ $v = cpu ] && o="--values cpu"
	# shellcheck disable=SC2086
	$MEMSIM record $o -o "$tmp/$v.csv" -- "$PY" "$P" >/dev/null 2>"$tmp/$v.err" ||
		fail "record $v: $(tail -3 "$tmp/$v.err")"
	grep -v '^memsim' "$tmp/$v.err" >"$tmp/$v.out"
	cmp -s "$want" "$tmp/$v.out" ||
		fail "$v: $(diff "$want" "$tmp/$v.out")"
done

# uncaught, the GPU's error is the script's, as on the GPU: memsim record
# exits non-zero and names the script, not itself, as where it came from
printf 'import torch\nx = torch.randn(4, device="cuda")\ntorch.clamp(x, max=torch.tensor(1.0))\n' >"$tmp/u.py"
$MEMSIM record --fake -o "$tmp/u.csv" -- "$PY" "$tmp/u.py" >/dev/null 2>"$tmp/u.err" &&
	fail "uncaught: recorded"
grep -q "u.py raised RuntimeError: Expected all tensors to be on the same device" "$tmp/u.err" ||
	fail "uncaught: $(head -3 "$tmp/u.err")"
grep -q "raised inside memsim record" "$tmp/u.err" &&
	fail "uncaught: called the recorder's own"

finish recorder_same_device.sh
