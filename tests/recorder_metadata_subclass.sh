#!/bin/sh
# memsim record --fake: a tensor subclass of metadata only, as MONAI's
# MetaTensor (a __torch_function__, no __torch_dispatch__; recorder/
# metadata_subclass.py).  A host batch of it moved to the GPU, ops on it,
# a clone that deep-copies its __dict__, as_subclass(torch.Tensor), a
# Conv3d forward and backward, a power's backward: the same types and
# metadata as on the host, the subclass's clone called once (the
# script's call, not the fake mode's reference of pow(x, 1), a.clone(),
# on the subclass: MONAI's SegResNet under GradScaler recursed there), and the GPU's allocations, x, y and the clone first (32768 bytes
# each), with no assumption, under --fake and --values cpu
# (fake.metadata_subclasses).  Before, `batch.to(device)` raised
# "Multiple dispatch failed for aten._to_copy" (FakeTensorMode refused
# the subclass), and as_subclass of a fake tensor "already associated to
# a python object of type FakeTensor".  Needs Python 3 and PyTorch;
# skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
P="$SRC/recorder/metadata_subclass.py"
"$PY" "$P" cpu 2>"$tmp/host" || fail "host run: $(tail -3 "$tmp/host")"
for v in fake cpu; do
	o=
	[ $v = cpu ] && o="--values cpu"
	# shellcheck disable=SC2086
	$MEMSIM record $o -o "$tmp/$v.csv" -- "$PY" "$P" >/dev/null 2>"$tmp/$v.err" ||
		fail "record $v: $(tail -3 "$tmp/$v.err")"
	grep -v '^memsim' "$tmp/$v.err" >"$tmp/$v.out"
	cmp -s "$tmp/host" "$tmp/$v.out" ||
		fail "$v: $(diff "$tmp/host" "$tmp/$v.out")"
	awk -F, '$3 == "alloc" { print $5 }' "$tmp/$v.csv" | head -3 |
		tr '\n' ' ' >"$tmp/o"
	[ "$(cat "$tmp/o")" = "32768 32768 32768 " ] ||
		fail "$v: first allocations $(cat "$tmp/o")"
	grep -q ',annotate,' "$tmp/$v.csv" && fail "$v: an assumption"
	$MEMSIM run --json "$tmp/$v.csv" >/dev/null || fail "run $v"
done

finish recorder_metadata_subclass.sh
