#!/bin/sh
# memsim record --fake, backward formulas that combine two masks of their
# own: evenly_distribute_backward (the max, min, median or nanmedian of a
# whole tensor: input.isnan() and value.isnan(), then input == value)
# and clamp_backward with tensor bounds (self >= min, self <= max).  On
# plain tensors they combine them in place (logical_and_); for tensor
# subclasses, which every fake tensor is, out of place: a third mask of
# the input's size the GPU never makes (512 bytes here, the input being
# (8, 64) floats).  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/m.py" <<'PY'
import sys
import torch
x = torch.randn(8, 64, device="cuda", requires_grad=True)
if sys.argv[1] == "max":
    y = x.max()
elif sys.argv[1] == "median":
    y = x.median()
elif sys.argv[1] == "clamp":
    y = x.clamp(min=torch.full((64,), -0.5, device="cuda"),
                max=torch.full((64,), 0.5, device="cuda"))
y.sum().backward()
PY
for case in max median clamp; do
	$MEMSIM record -o "$tmp/$case.csv" -- "$PY" "$tmp/m.py" $case \
		2>"$tmp/err" || fail "record $case: $(tail -3 "$tmp/err")"
	got=$(awk -F, '$3 == "alloc" && $8 ~ /^backward ./ { printf "%s ", $5 }' "$tmp/$case.csv")
	case $case in
	# isnan (512), the value's isnan (1), input == value (512), the
	# count (int64), grad / count, the gradient
	max|median) want="512 1 512 8 4 2048 " ;;
	# the zero, self >= min, self <= max, where's gradient
	clamp) want="4 512 512 2048 " ;;
	esac
	[ "$got" = "$want" ] || fail "$case: $got, want $want"
done
finish recorder_grad_masks.sh
