#!/bin/sh
# memsim record --fake: the straight-through estimator's note
# (traces/memsim_record/known.py, Known.straight) keeps no tensor alive.
# `1 - x` notes its result with x; the note held x itself, so x lived as
# long as 1 - x did, where PyTorch frees x's storage when its last
# reference goes (c10::StorageImpl's release into
# CUDACachingAllocator's free).  ermongroup/ddim's generalized_steps
# (c1 = eta * ((1 - at / at_next) * (1 - at_next) / (1 - at)).sqrt()) freed
# at / at_next one op later than --values cpu did.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch

for mode in fake cpu; do
	opt=
	[ $mode = cpu ] && opt="--values cpu"
	# shellcheck disable=SC2086
	$MEMSIM record $opt -o "$tmp/$mode.csv" -- "$PY" "$SRC/recorder/known_straight_free.py" \
		2>"$tmp/err.$mode" || fail "record $mode: $(tail -3 "$tmp/err.$mode")"
	# (the script's stdout goes to stderr)
	grep -qx '1.0' "$tmp/err.$mode" || fail "estimator $mode: $(cat "$tmp/err.$mode")"
	awk -F, 'NR > 1 && $3 != "annotate" { print $3, $5 }' "$tmp/$mode.csv" >"$tmp/$mode.ev"
done
# a, b, a * b, 1 - a * b; free a * b; the product; then frees
printf '%s\n' "alloc 32" "alloc 32" "alloc 32" "alloc 32" "free_completed 32" \
	"alloc 32" >"$tmp/want"
head -6 "$tmp/fake.ev" | cmp -s - "$tmp/want" ||
	fail "fake: a * b not freed before the product: $(head -8 "$tmp/fake.ev")"
cmp -s "$tmp/fake.ev" "$tmp/cpu.ev" ||
	fail "fake and --values cpu differ: $(diff "$tmp/fake.ev" "$tmp/cpu.ev")"
grep -q "0 assumptions" "$tmp/err.fake" ||
	fail "the estimator's value is no longer known: $(cat "$tmp/err.fake")"
finish recorder_known_free.sh
