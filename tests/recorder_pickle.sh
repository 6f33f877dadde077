#!/bin/sh
# memsim record --fake: plain pickle (pickle.dump/dumps, pickle.Pickler)
# of CUDA tensors.  PyTorch pickles a CUDA tensor by its storage's bytes
# (Tensor.__reduce_ex__ -> _reduce_ex_internal; the storage's
# __reduce__ -> _load_from_bytes), copied to the host, so the dump
# allocates nothing on the GPU and the load makes the tensor on its device
# again.  A fake tensor pickled so carried its FakeTensorMode along, which
# does not pickle ("Can't pickle local object 'run.<locals>._Mode'"):
# NVlabs/edm's persistent classes pickle every module's state as they are
# built (persistence._check_pickleable), and its training loop pickles the
# network snapshots.  copy.copy (a __reduce_ex__ too) keeps sharing the
# storage.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
for v in rules cpu; do
	$MEMSIM record --values $v -o "$tmp/p.csv" -- "$PY" \
		"$SRC/recorder/pickle_fake.py" >"$tmp/err" 2>&1 ||
		fail "record ($v): $(tail -3 "$tmp/err")"
	grep -v '^memsim record' "$tmp/err" >"$tmp/printed"
	printf 'after dumps 0\nloaded cuda (1000,) torch.float32 4096\nloaded2 cuda (128, 256) 135680\n' >"$tmp/want"
	cmp -s "$tmp/printed" "$tmp/want" ||
		fail "--values $v printed: $(cat "$tmp/printed")"
done
finish recorder_pickle.sh
