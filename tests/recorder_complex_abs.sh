#!/bin/sh
# memsim record --fake: abs and angle of a complex tensor on CUDA
# (unary_op_impl_with_complex_to_float_out) run the kernel complex ->
# complex into a complex_result of the input's size, made after the real
# output and freed once its real part is copied out.  lucidrains'
# gateloop-transformer takes a.abs() and a.angle() of complex state
# transitions (and angle's backward takes abs again): the H200's snapshot
# had that temporary at each, which the recording lacked.  abs of a real
# tensor: none.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
c = torch.view_as_complex(torch.randn(4, 1024, 256, 2, device="cuda"))
m = c.abs()
p = torch.angle(c)
r = torch.randn(1000, device="cuda").abs()
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" { printf "%s+%s", s, $5; s = " ";
	if ($8 ~ /complex_result/) t[$4] = 1 }
	$3 == "free_completed" && ($4 in t) { printf " -" }
	END { print "" }' "$tmp/a.csv")
# c (4 x 1024 x 256 complex64: 8 MiB); |c| (4 MiB of float), then the
# complex result (8 MiB) freed; the same for the angle; a real abs: its
# input and output alone
want="+8388608 +4194304 +8388608 - +4194304 +8388608 - +4000 +4000"
[ "$got" = "$want" ] || fail "allocations: $got"
finish recorder_complex_abs.sh
