#!/bin/sh
# memsim record --fake: torch.einsum of three operands or more contracts
# them in opt_einsum's order where the opt_einsum package is installed
# (torch.functional.einsum asks contract_path for the path), left to
# right where it is not, and the intermediates differ (Time-Series-
# Library's MambaSimple: +18% peak allocated recorded without it, the
# H200's figure to the byte with it).  The recording follows the
# machine it runs on; without opt_einsum each such call on the GPU is an
# assumption einsum:left-to-right (a machine with it may contract
# otherwise).  Here a stand-in opt_einsum (its contract_path: the last
# two operands first) shows that the recording takes the path it gives
# and notes nothing.  Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import opt_einsum' 2>/dev/null && skip "opt_einsum is installed here"
cat >"$tmp/a.py" <<'PY'
import torch
a = torch.randn(1024, 4, device="cuda")
b = torch.randn(4, 1024, device="cuda")
c = torch.randn(1024, 4, device="cuda")
y = torch.einsum("ij,jk,kl->il", a, b, c)
z = torch.einsum("ij,jk->ik", a, b)
PY
mkdir -p "$tmp/oe/opt_einsum"
cat >"$tmp/oe/opt_einsum/__init__.py" <<'PY'
__version__ = "0.0"
def contract_path(eq, *ops, optimize="auto"):
    return [(1, 2), (0, 1)], None
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/l.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
(cd "$tmp" && PYTHONPATH="$tmp/oe${PYTHONPATH:+:$PYTHONPATH}" \
	$MEMSIM record --fake -o "$tmp/o.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record with opt_einsum: $(tail -3 "$tmp/err")"
grep ',assumption,' "$tmp/l.csv" | cut -d, -f8 >"$tmp/got"
echo "einsum:left-to-right a.py:5 =3" >"$tmp/want"
cmp -s "$tmp/got" "$tmp/want" || fail "assumptions: $(diff "$tmp/want" "$tmp/got")"
grep -q ',assumption,' "$tmp/o.csv" && fail "an assumption with opt_einsum: $(grep assumption "$tmp/o.csv")"
# line 5's requests: left to right, a @ b first, a 1024 x 1024
# intermediate (4 MiB), then the 1024 x 4 output (16 KiB); the path
# (b @ c first) a 4 x 4 one (64 bytes) and the output
sizes() { awk -F, '$3 == "alloc" && $8 ~ /a.py:5 / { print $5 }' "$1" | tr '\n' ' '; }
[ "$(sizes "$tmp/l.csv")" = "4194304 16384 " ] || fail "left to right: $(sizes "$tmp/l.csv")"
[ "$(sizes "$tmp/o.csv")" = "64 16384 " ] || fail "opt_einsum's path: $(sizes "$tmp/o.csv")"
finish recorder_einsum_order.sh
