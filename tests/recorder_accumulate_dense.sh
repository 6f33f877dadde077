#!/bin/sh
# memsim record --fake: the autograd engine adds a gradient into the one
# already buffered in place (InputBuffer::accumulate) when the buffered
# one is non-overlapping and dense (can_accumulate_inplace) and holds the
# last reference, whatever the order of its dimensions.  reformer-pytorch's
# look_one_back, torch.cat([x, torch.cat([x[:, -1:], x[:, :-1]], dim=1)],
# dim=2), gives x three gradients: a narrow of a transposed one (not
# dense: the first sum is a new tensor, in the transposed layout) and two
# slice_backward zeros, the second added into that sum in place.  The
# recorder required a contiguous buffer and made a second 64 MiB sum in
# every LSH layer's backward, which the H200's snapshot does not have.
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(4, 64, 32, 16, device="cuda", requires_grad=True)
w = torch.randn(4, 64, 16, 64, device="cuda")
x_extra = torch.cat([x[:, -1:], x[:, :-1]], dim=1)
y = torch.cat([x, x_extra], dim=2)
(y.transpose(-1, -2) * w).sum().backward()
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
# from backward on: each allocation's size, "-SIZE" for each free
got=$(awk -F, '$8 ~ /^backward/ { on = 1 }
	on && $3 == "alloc" { printf "%s%s", s, $5; s = " "; sz[$4] = $5 }
	on && $3 == "free_completed" && ($4 in sz) { printf " -%s", sz[$4] }
	END { print "" }' "$tmp/a.csv")
# the loss's gradient (4), mul's (1048576); the first slice_backward's
# zeros (524288), its sum with the narrow of the transposed gradient
# (524288), the zeros freed; the second zeros (524288), added into the
# sum in place and freed with mul's gradient; AccumulateGrad's contiguous
# copy of the transposed sum (524288), the sum freed.
want="4 1048576 524288 524288 -524288 524288 -1048576 -524288 524288 -524288 -4"
[ "$got" = "$want" ] || fail "accumulate: $got"
finish recorder_accumulate_dense.sh
