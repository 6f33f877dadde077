#!/bin/sh
# A bool mask and its complement (~m: bitwise_not, logical_not), both of
# values --fake does not have: when one is counted (boolean indexing,
# nonzero, sum: Values.mask assumes its values, --dynamic-fraction), the
# other holds the remaining elements, so that their counts add up to the
# size and the complement's any() and all() agree with them.  nflows'
# rational-quadratic spline (unconstrained_rational_quadratic_spline)
# makes inside_interval_mask and outside = ~inside, writes
# outputs[outside] (half the elements by the rule), then runs the spline
# under `if torch.any(inside_interval_mask)`, which the --item-bool
# default answered False: the recording skipped every spline, and the
# gradients of the networks that make its parameters (nflows-nsf-ar: 99
# MB against 118 MB under --values cpu).  A mask with no complement keeps
# the default.  Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/ma.py" <<'PY'
import torch
x = torch.randn(512, 6, device="cuda") * 2
h = torch.nn.Linear(6, 6).cuda()(x)            # values unknown under --fake
inside = (h >= -3) & (h <= 3)
outside = ~inside
out = torch.zeros_like(h)
out[outside] = h[outside]                      # 1536 of 3072
if torch.any(inside):
    a = torch.empty(1 << 20, device="cuda")    # 4 MiB: taken
if inside.all():
    b = torch.empty(1 << 21, device="cuda")    # 8 MiB: not taken
y = h[inside]                                  # the other 1536
print("counts", int(inside.sum()) + int(outside.sum()))
g = h > 1
k = torch.logical_not(g)                       # the other way round
z = h[g]
print("rest", bool(k.any()), int(k.sum()) + z.numel())
m = h > 0                                      # no complement: the default
print("plain", bool(m.any()))
PY
$MEMSIM record --fake -o "$tmp/ma.csv" -- "$PY" "$tmp/ma.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
n4=$(awk -F, '$3 == "alloc" && $5 == 4194304' "$tmp/ma.csv" | wc -l)
n8=$(awk -F, '$3 == "alloc" && $5 == 8388608' "$tmp/ma.csv" | wc -l)
[ "$n4" -eq 1 ] || fail "any() of the complement: $n4 4 MiB requests, not 1"
[ "$n8" -eq 0 ] || fail "all() of the complement: $n8 8 MiB requests, not 0"
# h[inside]: 1536 floats after h[outside]'s 1536
n=$(awk -F, '$3 == "alloc" && $5 == 6144' "$tmp/ma.csv" | wc -l)
[ "$n" -ge 2 ] || fail "h[inside] not of the other 1536 elements"
for want in "counts 3072" "rest True 3072" "plain False"; do
	grep -qxF "$want" "$tmp/out" || fail "'$want' not in: $(cat "$tmp/out")"
done
finish recorder_mask_any.sh
