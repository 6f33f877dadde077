#!/bin/sh
# memsim record --fake: torch.einsum of three operands or more contracts
# them in opt_einsum's order where the opt_einsum package is installed
# (torch.functional.einsum asks contract_path for the path), left to
# right where it is not, and the intermediates differ (Time-Series-
# Library's MambaSimple: +18% peak allocated left to right, the H200's
# figure to the byte in opt_einsum's order).  Where opt_einsum is missing
# the recorder stands in for it (traces/memsim_record/einsumpath.py:
# opt_einsum's "auto" path for up to four operands, an assumption
# einsum:opt-einsum a call on the GPU; left to right beyond, assumption
# einsum:left-to-right); a program that turns
# torch.backends.opt_einsum.enabled off contracts left to right and
# notes nothing.  With a stand-in opt_einsum package (its contract_path:
# the last two operands first) the recording takes its path and notes
# nothing.  A program that takes the package from
# torch.backends.opt_einsum.get_opt_einsum() gets contract() too.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import opt_einsum' 2>/dev/null && skip "opt_einsum is installed here"
cat >"$tmp/a.py" <<'PY'
import sys
import torch
a = torch.randn(1024, 4, device="cuda")
b = torch.randn(4, 1024, device="cuda")
c = torch.randn(1024, 4, device="cuda")
if "off" in sys.argv:
    torch.backends.opt_einsum.enabled = False
y = torch.einsum("ij,jk,kl->il", a, b, c)
z = torch.einsum("ij,jk->ik", a, b)
d = torch.randn(4, 8, device="cuda")
w = torch.einsum("ij,jk,kl,lm->im", a, b, c, d)
v = torch.einsum("ij,jk,kl,lm,mn->in", a, b, c, d, d.t())
oe = torch.backends.opt_einsum.get_opt_einsum()
print("contract", tuple(oe.contract("ij,jk->ik", a, b).shape))
PY
rec() {
	out=$1; shift
	(cd "$tmp" && $MEMSIM record --fake -o "$tmp/$out.csv" -- "$PY" a.py "$@") \
		>"$tmp/err" 2>&1 || fail "record $out: $(tail -3 "$tmp/err")"
}
rec m
grep -qx "contract (1024, 1024)" "$tmp/err" ||
	fail "get_opt_einsum().contract: $(tail -3 "$tmp/err")"
rec off off
PYTHONPATH="$tmp/oe${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$tmp/oe/opt_einsum"
cat >"$tmp/oe/opt_einsum/__init__.py" <<'PY'
__version__ = "0.0"
def contract_path(eq, *ops, optimize="auto"):
    return [(len(ops) - 2, len(ops) - 1)] + [(0, 1)] * (len(ops) - 2), None
def contract(eq, *ops, **kwargs):
    import torch
    return torch.einsum(eq, *ops)
PY
export PYTHONPATH
rec o
notes() { grep ',assumption,' "$tmp/$1.csv" | cut -d, -f8 | tr '\n' '|'; }
[ "$(notes m)" = "einsum:opt-einsum a.py:8 =3|einsum:opt-einsum a.py:11 =4|einsum:left-to-right a.py:12 =5|" ] ||
	fail "assumptions: $(notes m)"
[ -z "$(notes off)" ] || fail "assumptions with opt_einsum off: $(notes off)"
[ -z "$(notes o)" ] || fail "assumptions with opt_einsum: $(notes o)"
# line 8's requests: left to right, a @ b first, a 1024 x 1024
# intermediate (4 MiB), then the 1024 x 4 output (16 KiB); opt_einsum's
# optimal path (b @ c first) a 4 x 4 one (64 bytes) and the output, as
# the stand-in's (the last two first)
sizes() { awk -F, -v l="a.py:$2 " '$3 == "alloc" && index($8, l) { print $5 }' "$tmp/$1.csv" | tr '\n' ' '; }
[ "$(sizes off 8)" = "4194304 16384 " ] || fail "left to right: $(sizes off 8)"
[ "$(sizes m 8)" = "64 16384 " ] || fail "opt_einsum's path here: $(sizes m 8)"
[ "$(sizes o 8)" = "64 16384 " ] || fail "opt_einsum's path: $(sizes o 8)"
# four operands: b @ c (64 bytes), then (bc) @ d (128), a @ (bcd) (32 KiB)
[ "$(sizes m 11)" = "64 128 32768 " ] || fail "four operands: $(sizes m 11)"
# five: left to right, 4 MiB first
[ "$(sizes m 12 | cut -d' ' -f1)" = "4194304" ] || fail "five operands: $(sizes m 12)"
finish recorder_einsum_order.sh
