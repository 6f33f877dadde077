#!/bin/sh
# memsim record --fake, backward formulas that put the gradient into
# zeros of the input's size: gather_backward (GatherBackward0,
# scatter_add), value_selecting_reduction_backward (topk, max, min,
# sort, ... along a dimension: scatter), cummaxmin_backward (cummax,
# cummin: scatter_add), masked_select_backward (masked_scatter),
# take_backward (put), index_select_backward (index_add) and
# trace_backward (index_fill of the flat zeros).  On plain tensors they
# do it in place (scatter_add_, scatter_, ...): one block, the gradient;
# for tensor subclasses, which every fake tensor is (isTensorSubclassLike
# is true under a dispatch mode), they call the out-of-place op, a
# second block of the input's size the GPU never makes (2 x 2048 bytes
# before the fix).  The input is (8, 64) floats: 2048 bytes.  Skips (77)
# without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/g.py" <<'PY'
import sys
import torch
x = torch.randn(8, 64, device="cuda", requires_grad=True)
i = torch.randint(0, 64, (8, 4), device="cuda")
if sys.argv[1] == "gather":
    y = x.gather(1, i)
elif sys.argv[1] == "topk":
    y = x.topk(4, dim=1).values
elif sys.argv[1] == "min":
    y = x.min(dim=1).values
elif sys.argv[1] == "cummax":
    y = x.cummax(1).values
elif sys.argv[1] == "cummin":
    y = x.cummin(0).values
elif sys.argv[1] == "masked_select":
    y = x.masked_select((torch.arange(512, device="cuda") % 2 == 0).view(8, 64))
elif sys.argv[1] == "take":
    y = x.take(torch.randint(0, 512, (40,), device="cuda"))
elif sys.argv[1] == "index_select":
    y = x.index_select(0, torch.randint(0, 8, (12,), device="cuda"))
elif sys.argv[1] == "trace":
    y = x[:, :8].trace()
y.sum().backward()
PY
for case in gather topk min cummax cummin masked_select take index_select trace; do
	$MEMSIM record -o "$tmp/$case.csv" -- "$PY" "$tmp/g.py" $case \
		2>"$tmp/err" || fail "record $case: $(tail -3 "$tmp/err")"
	# the blocks the backward nodes make: x.grad alone
	got=$(awk -F, '$3 == "alloc" && $8 ~ /^backward / { printf "%s:%s ", $5, $8 }' "$tmp/$case.csv")
	case $case in
	gather) want="2048:backward GatherBackward0 " ;;
	topk) want="2048:backward TopkBackward0 " ;;
	min) want="2048:backward MinBackward0 " ;;
	cummax) want="2048:backward CummaxBackward0 " ;;
	cummin) want="2048:backward CumminBackward0 " ;;
	masked_select) want="2048:backward MaskedSelectBackward0 " ;;
	take) want="2048:backward TakeBackward0 " ;;
	index_select) want="2048:backward IndexSelectBackward0 " ;;
	# the flat zeros (64 floats) and the diagonal's indices (8 longs),
	# then the slice's gradient
	trace) want="256:backward TraceBackward0 64:backward TraceBackward0 2048:backward SliceBackward0 " ;;
	esac
	[ "$got" = "$want" ] || fail "$case: $got, want $want"
done
finish recorder_scatter_zeros.sh
