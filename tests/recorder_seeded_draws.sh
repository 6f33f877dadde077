#!/bin/sh
# memsim record --fake: Tensor.exponential_, geometric_, log_normal_ and
# cauchy_ with generator= (a torch.Generator of the program's).  Their fake
# kernels are torch._refs' decompositions, which raise "generator is not
# supported in refs"; on the GPU each fills self in place from the
# generator (Distributions.cpp's templates, no allocation).  VAR's
# autoregressive_infer_cfg(more_smooth=True) (the r35b kit's
# var-sample-d20-fp32-smooth) stopped there.  With --values cpu the draws
# come from the program's generator (reseeded: the same numbers).  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/seeded_draws.py" \
	2>"$tmp/err" || fail "record: $(grep -v '^ ' "$tmp/err" | tail -3)"
grep -v '^memsim\|^W[0-9]' "$tmp/err" >"$tmp/got"
cat >"$tmp/want" <<'OUT'
exponential_ True (4, 1024) 0
geometric_ True (4, 1024) 0
log_normal_ True (4, 1024) 0
cauchy_ True (4, 1024) 0
gumbel (4, 1024) 16384
OUT
cmp -s "$tmp/got" "$tmp/want" || fail "fake: $(diff "$tmp/want" "$tmp/got")"
$MEMSIM record --values cpu -o "$tmp/b.csv" -- "$PY" \
	"$SRC/recorder/seeded_draws.py" values 2>"$tmp/err" ||
	fail "record --values cpu: $(grep -v '^ ' "$tmp/err" | tail -3)"
grep -v '^memsim\|^W[0-9]' "$tmp/err" >"$tmp/got"
echo "reseeded True True True" >>"$tmp/want"
cmp -s "$tmp/got" "$tmp/want" || fail "values: $(diff "$tmp/want" "$tmp/got")"
finish recorder_seeded_draws.sh
