#!/bin/sh
# memsim record --fake: t[range(n), cls] = 1.0 into t = full_like(x, 0.0)
# (yolov7's one-hot class targets, ComputeLossOTA): index_put_ writes
# part of a tensor whose values are one known scalar, so the shadow it
# leaves is that scalar's values, copied, with the indexed elements
# written (at::native::index_put_: the others keep theirs).  The copy was
# made under the fake mode, a fake tensor: the next op that read the
# shadow (t != 0, its count) failed in the recorder's own bookkeeping
# (assumption values:lost), every value was forgotten, and x[t != 0] got
# --dynamic-fraction's 2,000 of 4,000 elements where the mask keeps
# 1,000.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
$MEMSIM record -o "$tmp/s.csv" -- "$PY" "$SRC/recorder/setitem_known.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
grep -v '^memsim record' "$tmp/err" >"$tmp/printed"
[ "$(cat "$tmp/printed")" = "1000 1000.0" ] ||
	fail "the script printed '$(cat "$tmp/printed")', not '1000 1000.0'"
grep -q 'annotate' "$tmp/s.csv" &&
	fail "assumptions: $(grep annotate "$tmp/s.csv" | cut -d, -f8 | head -3)"
cut -d, -f3,5,8 "$tmp/s.csv" | grep 'setitem_known.py:11 ' >"$tmp/out"
cat >"$tmp/want" <<EOT
alloc,4000,setitem_known.py:11 <module>
alloc,4000,setitem_known.py:11 <module>
EOT
cmp -s "$tmp/out" "$tmp/want" || fail "x[t != 0]: $(diff "$tmp/want" "$tmp/out" | head -8)"
finish recorder_setitem_known.sh
