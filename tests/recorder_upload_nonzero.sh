#!/bin/sh
# memsim record --fake: nonzero() of a host tensor too large for a shadow
# moved whole to the GPU (`adj.cuda()`, _to_copy) is counted on the host
# tensor the copy came from (Values._upload), exact.  pyGAT's sparse GAT
# (SpGraphAttentionLayer: `edge = adj.nonzero().t()` of its dense Cora
# adjacency) had the rules' half of 7.3 million elements as edges, 3.5
# GB where a real run's peak is 0.17.  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/upload_nonzero.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "edges 1200 of 1200" "argwhere 1200" "first [[0, 0, 1], [0, 1, 1]]"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
grep -q "assumptions.*nonzero" "$tmp/err" && fail "nonzero assumed: $(tail -1 "$tmp/err")"
finish recorder_upload_nonzero.sh
