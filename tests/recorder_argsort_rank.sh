#!/bin/sh
# memsim record --fake: nonzero() of sort's or argsort's indices along
# the last dimension compared with one value a row (eq) counts at most
# one element a row, since each row of the indices is a permutation of
# 0..n-1 (Values._perm_eq).  KnowledgeGraphEmbedding's test_step asserts
# `(argsort[i, :] == positive_arg[i]).nonzero().size(0) == 1`; the rules'
# half of the row (10,000 of 20,000 entities) stopped it.  Needs Python 3
# and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$SRC/recorder/argsort_rank.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "argsort rows [1, 1, 1, 1]" "sort column 4" "left 1" \
	"dim0 bounded False" "written bounded False"; do
	grep -qxF "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_argsort_rank.sh
