#!/bin/sh
# torch.roll on the GPU (roll_cuda, roll_common): a non-contiguous input is
# copied first (self.contiguous()), and several dims are rolled one at a
# time through at::roll, each intermediate result freed as the call that
# made it returns.  The recorder saw one output only: neuraloperator's
# spectral projection (fftshift/ifftshift of 8192 x 8192 complex128
# fields) was -20.7% allocated against the H200 (docs/corpus.md, "Third
# and fourth rounds on the H200").  Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/ro.py" <<'PY'
import torch
x = torch.zeros(256, 1024, device="cuda")          # 1 MiB
torch.cuda.synchronize()
a = torch.roll(x, 1, 0)                            # contiguous, one dim
b = torch.roll(x.t(), 1, 0)                        # copy, out, copy freed
c = torch.roll(x, (1, 2), (0, 1))                  # dim0, out, dim0 freed
d = torch.roll(x.t(), (1, 2, 3), (0, 1, 0))        # copy, d0, -copy, d1, out, -d1, -d0
e = torch.fft.fftshift(x)                          # all dims: as c
f = torch.roll(x.t(), 5)                           # flattened: copy, out, -copy
PY
$MEMSIM record --fake -o "$tmp/ro.csv" -- "$PY" "$tmp/ro.py" \
	>/dev/null 2>"$tmp/err" || fail "record: $(tail -3 "$tmp/err")"
# the sequence of the 1 MiB requests after x: + for an alloc, - for a free
awk -F, '$3 == "alloc" && $5 == 1048576 { s = s "+"; live[$4] = 1 }
	$3 == "free_completed" && ($4 in live) { s = s "-"; delete live[$4] }
	END { print s }' "$tmp/ro.csv" >"$tmp/seq"
# (x, a, b, c, d, e, f; the seven stay live at the script's end,
# docs/recording-boundary.md)
want="+ + ++- ++- ++-++-- ++- ++-"
want=$(echo "$want" | tr -d ' ')
[ "$(cat "$tmp/seq")" = "$want" ] ||
	fail "1 MiB requests '$(cat "$tmp/seq")', not '$want'"
finish recorder_roll.sh
