#!/bin/sh
# memsim record --fake: the values of GPU tensors (traces/memsim_record/
# values.py, docs/recording-values.md): rules that respect what an op
# guarantees, uniform top-k routing, --values cpu.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
R="$SRC/recorder"
# sizes CSV FILE:LINE: the sizes allocated at that line, on one line.
sizes() {
	awk -F, -v l="$2 " '$3 == "alloc" && index($8, l) == 1 {
		printf "%s%s", s, $5; s = " " } END { print "" }' "$1"
}

# 1. Values that cross to the host (formatting included).  uniform_(0, 1).item() is its
# midpoint 0.5 (never 1.0: int(u * 10) indexes a list of 10), linspace
# and arange are computed (2.0, 17), randint(3, 9) is the lower median of
# 3..8 (5), argmax over 7 entries is routed (row 2: 2).  Each assumption
# an annotate row naming its line and value.
$MEMSIM record -o "$tmp/h.csv" -- "$PY" "$R/values_host.py" 2>"$tmp/err" ||
	fail "record host values: $(tail -3 "$tmp/err")"
grep -q "^values 5 2.0 17 5 2$" "$tmp/err" || fail "host values: $(cat "$tmp/err")"
# f"{t:.3f}" of a 0-dim tensor: its .item() (a loss: 1.0; linspace: exact)
grep -q "^fmt 1.000 0.25$" "$tmp/err" || fail "format: $(cat "$tmp/err")"
# sizes[5] = 6144 floats; 2000 floats; 17 and 5 bytes
got="$(sizes "$tmp/h.csv" values_host.py:7) $(sizes "$tmp/h.csv" values_host.py:9)"
got="$got $(sizes "$tmp/h.csv" values_host.py:11) $(sizes "$tmp/h.csv" values_host.py:13)"
[ "$got" = "24576 8000 17 5" ] || fail "host value sizes: $got"
grep ',annotate,' "$tmp/h.csv" | cut -d, -f7- >"$tmp/out"
cat >"$tmp/want" <<'EOF'
assumption,item:range values_host.py:6 =0.5
assumption,item:range values_host.py:12 =5
assumption,routing values_host.py:14 =uniform E=7 k=1
assumption,item:float values_host.py:17 =1.0
EOF
cmp -s "$tmp/out" "$tmp/want" || fail "host assumptions: $(diff "$tmp/want" "$tmp/out")"
grep -q "; 4 assumptions (item:float 1, item:range 2, routing 1)$" "$tmp/err" ||
	fail "host summary: $(cat "$tmp/err")"
# memsim info lists them, by kind and by site.
$MEMSIM info "$tmp/h.csv" >"$tmp/info" || fail "info"
grep -q "^assumptions 4 (item:range 2, item:float 1, routing 1)$" "$tmp/info" ||
	fail "info assumptions: $(cat "$tmp/info")"
grep -q "^ *1 x item:range values_host.py:6 =0.5$" "$tmp/info" ||
	fail "info assumption sites: $(cat "$tmp/info")"
$MEMSIM info --json "$tmp/h.csv" | tr -d ' \n' | grep -q '"assumptions":{"item:range":2,"item:float":1,"routing":1}' ||
	fail "info --json assumptions: $($MEMSIM info --json "$tmp/h.csv")"

# GradScaler (growth_interval 2): no inf or NaN is found (assumed), so the
# scale grows as in a real run, 65536 then 131072; under --values cpu
# found_inf has the gradients' values (none overflows), the same scales
# and nothing assumed (tests/recorder_gradscaler_cpu.sh: one that does).
for v in rules cpu; do
	$MEMSIM record --values $v -o "$tmp/s.csv" -- "$PY" "$R/values_scaler.py" 2>"$tmp/err" ||
		fail "record scaler $v: $(tail -3 "$tmp/err")"
	[ "$(grep '^scale' "$tmp/err" | tr '\n' ' ')" = "scale 65536.0 scale 131072.0 scale 131072.0 " ] ||
		fail "scaler $v: $(cat "$tmp/err")"
	want="; 3 assumptions (gradscaler:no-overflow 3)"
	[ $v = cpu ] && want="; 0 assumptions"
	grep -q "$want\$" "$tmp/err" ||
		fail "scaler $v summary: $(cat "$tmp/err")"
done

# 2. A top-2-of-8 MoE over 64 tokens: each expert gets 64 * 2 / 8 = 16
# tokens, by torch.where and by nonzero alike: x[tok] is 16 x 32 floats
# (2048 bytes) each, where --dynamic-fraction 0.5 gave 64 rows.
for how in where nonzero; do
	$MEMSIM record -o "$tmp/m.csv" -- "$PY" "$R/values_moe.py" $how 2>"$tmp/err" ||
		fail "record moe $how: $(tail -3 "$tmp/err")"
	got=$(sizes "$tmp/m.csv" values_moe.py:20)
	[ "$got" = "2048 2048 2048 2048 2048 2048 2048 2048" ] || fail "moe $how: $got"
	grep -q "^counts \[16, 16, 16, 16, 16, 16, 16, 16\] routed 128$" "$tmp/err" ||
		fail "moe $how counts: $(cat "$tmp/err")"
	grep -q "; 1 assumption (routing 1)$" "$tmp/err" || fail "moe $how summary: $(cat "$tmp/err")"
done
# The GPU the default device (DeepSeek-V3's model.py): bincount's counts,
# .tolist() of arange and multinomial are host tensors made on the host.
$MEMSIM record -o "$tmp/dd.csv" -- "$PY" "$R/values_default_device.py" 2>"$tmp/err" ||
	fail "record default device: $(tail -3 "$tmp/err")"
grep -q "^counts \[16, 16, 16, 16, 16, 16, 16, 16\] steps \[0, 1, 2\] drawn 2$" "$tmp/err" ||
	fail "default device counts: $(cat "$tmp/err")"
got=$(sizes "$tmp/dd.csv" values_default_device.py:21 | tr ' ' '\n' | grep -c '^2048$')
[ "$got" = 8 ] || fail "default device: x[tok] $got times 16 x 32 floats"
# An expert: the mask idx == e (64 x 2 bools, 128 bytes), its nonzero
# (16, 2) longs, 256 bytes.
got=$(sizes "$tmp/m.csv" values_moe.py:17)
[ "$got" = "$(echo 128 256 128 256 128 256 128 256 128 256 128 256 128 256 128 256)" ] ||
	fail "moe nonzero sizes: $got"
# --routing-imbalance 2: expert 0 gets 32 of the 128 choices, the other
# seven 96 (14 14 14 14 14 13 13).
$MEMSIM record --routing-imbalance 2 -o "$tmp/m2.csv" -- "$PY" "$R/values_moe.py" 2>"$tmp/err" ||
	fail "record moe imbalance: $(tail -3 "$tmp/err")"
got=$(sizes "$tmp/m2.csv" values_moe.py:20)
[ "$got" = "4096 1792 1792 1792 1792 1792 1664 1664" ] || fail "moe imbalance: $got"
grep -q ',assumption,routing values_moe.py:13 =imbalance 2 E=8 k=2$' "$tmp/m2.csv" ||
	fail "moe imbalance assumption: $(grep annotate "$tmp/m2.csv")"
$MEMSIM record --routing-imbalance 0.5 -o "$tmp/x.csv" -- "$PY" "$R/values_moe.py" 2>"$tmp/err" &&
	fail "--routing-imbalance 0.5 accepted"
grep -q "routing-imbalance" "$tmp/err" || fail "--routing-imbalance 0.5: $(cat "$tmp/err")"

# 3. --values cpu: the program's own values.  The MoE routes by its gate
# (seeded): the experts' batches follow its counts, 128 choices in all.
$MEMSIM record --values cpu -o "$tmp/mc.csv" -- "$PY" "$R/values_moe.py" 2>"$tmp/err" ||
	fail "record moe cpu: $(tail -3 "$tmp/err")"
counts=$(sed -n 's/^counts \[\(.*\)\] routed 128$/\1/p' "$tmp/err" | tr -d ,)
[ -n "$counts" ] || fail "moe cpu counts: $(cat "$tmp/err")"
want=$(for c in $counts; do printf '%s ' $((c * 128)); done)
got=$(sizes "$tmp/mc.csv" values_moe.py:20)
[ "$got " = "$want" ] || fail "moe cpu sizes: $got, counts $counts"
[ "$counts" != "16 16 16 16 16 16 16 16" ] || fail "moe cpu: uniform counts"
grep -q "; 0 assumptions$" "$tmp/err" || fail "moe cpu summary: $(cat "$tmp/err")"
# A loop that stops when a value crosses 0.55: x[t * 7000] = t / 10, so
# six 1 MiB buffers; --values rules does not have the 70000 values and
# answers the comparison False (no buffer).
$MEMSIM record --values cpu -o "$tmp/l.csv" -- "$PY" "$R/values_loop.py" 2>"$tmp/err" ||
	fail "record loop cpu: $(tail -3 "$tmp/err")"
grep -q "^steps 6$" "$tmp/err" || fail "loop cpu: $(cat "$tmp/err")"
[ "$(sizes "$tmp/l.csv" values_loop.py:9)" = "1048576 1048576 1048576 1048576 1048576 1048576" ] ||
	fail "loop cpu sizes: $(sizes "$tmp/l.csv" values_loop.py:9)"
$MEMSIM record -o "$tmp/l.csv" -- "$PY" "$R/values_loop.py" 2>"$tmp/err" ||
	fail "record loop: $(tail -3 "$tmp/err")"
grep -q "^steps 0$" "$tmp/err" || fail "loop rules: $(cat "$tmp/err")"
# fake.py's fused rms_norm (its outputs made empty) computed all the
# same, forward and backward: as PyTorch's own on the CPU, drawing from the
# recorder's generator.
$MEMSIM record --values cpu -o "$tmp/r.csv" -- "$PY" "$R/values_rms.py" 2>"$tmp/err" ||
	fail "record rms cpu: $(tail -3 "$tmp/err")"
"$PY" -c '
import torch, torch.nn.functional as F
g = torch.Generator(); g.manual_seed(0)
x = torch.randn(4, 16, generator=g).requires_grad_()
w = torch.randn(16, generator=g).requires_grad_()
y = F.rms_norm(x, (16,), w, 1e-6)
y.backward(torch.randn(4, 16, generator=g))
print("y", y.sum().item(), "gx", x.grad.sum().item(), "gw", w.grad.sum().item())' >"$tmp/want"
grep '^y ' "$tmp/err" >"$tmp/out"
cmp -s "$tmp/out" "$tmp/want" || fail "rms cpu: $(cat "$tmp/out") vs $(cat "$tmp/want")"
# Drawing until a random value crosses 0.9: the rules answer every draw
# 0.5, a loop that never ends, stopped past --item-repeats in one line;
# --values cpu draws from the recorder's generator (seeded 0).
$MEMSIM record --item-repeats 50 -o "$tmp/x.csv" -- "$PY" "$R/values_geo.py" 2>"$tmp/err"
[ $? -eq 1 ] || fail "geo: status"
[ "$(grep -c . "$tmp/err")" -eq 1 ] || fail "geo: not one line: $(cat "$tmp/err")"
grep -q "values_geo.py:4 <module> asked for a .item() of a random value (or an index) 50 times, each answered by the assumption 0.5: .*--values cpu; no trace written$" "$tmp/err" ||
	fail "geo message: $(cat "$tmp/err")"
$MEMSIM record --values cpu -o "$tmp/x.csv" -- "$PY" "$R/values_geo.py" 2>"$tmp/err" ||
	fail "geo cpu: $(cat "$tmp/err")"
n=$("$PY" -c '
import torch
g = torch.Generator(); g.manual_seed(0)
n = 0
while torch.rand((), generator=g).item() < 0.9:
    n += 1
print(n)')
grep -q "^draws $n$" "$tmp/err" || fail "geo cpu (want $n): $(cat "$tmp/err")"
# A program without data-dependent behaviour: the same trace either way
# (the annotate rows aside: the rules' loss.item() is 1.0).
strip() { awk -F, '$3 != "annotate" { print $3, $4, $5, $6, $7, $8 }' "$1"; }
$MEMSIM record -o "$tmp/g1.csv" -- "$PY" "$R/gpt.py" 2 32 2 64 2 2>"$tmp/err" ||
	fail "record gpt: $(tail -3 "$tmp/err")"
$MEMSIM record --values cpu -o "$tmp/g2.csv" -- "$PY" "$R/gpt.py" 2 32 2 64 2 2>"$tmp/err" ||
	fail "record gpt cpu: $(tail -3 "$tmp/err")"
strip "$tmp/g1.csv" >"$tmp/g1"
strip "$tmp/g2.csv" >"$tmp/g2"
[ "$(grep -c '^alloc' "$tmp/g1")" -gt 300 ] || fail "gpt: few allocations"
cmp -s "$tmp/g1" "$tmp/g2" || fail "gpt: --values cpu changed the trace"
# ... and its losses are computed (cross entropy of 8192 classes, near
# ln 8192 = 9.01 at the start), no assumption left.
grep -q "^step 1 loss 9\.[0-9]*$" "$tmp/err" || fail "gpt cpu loss: $(cat "$tmp/err")"
grep -q "; 0 assumptions$" "$tmp/err" || fail "gpt cpu summary: $(cat "$tmp/err")"
$MEMSIM record --values gpu -o "$tmp/x.csv" -- "$PY" "$R/gpt.py" 2>"$tmp/err" &&
	fail "--values gpu accepted"
grep -q "values" "$tmp/err" || fail "--values gpu: $(cat "$tmp/err")"

# 4. Custom operators with a data-dependent output size (a fake kernel
# asking ctx.new_dynamic_size()): refused in one line naming the
# operator under the rules; computed by its CPU kernel under --values
# cpu; torchvision::nms keeps --dynamic-fraction of the boxes (100 of
# 200, 800 bytes).
$MEMSIM record -o "$tmp/d.csv" -- "$PY" "$R/values_dynop.py" mylib::keep 2>"$tmp/err"
[ $? -eq 1 ] || fail "dynamic op: status"
[ "$(grep -c . "$tmp/err")" -eq 1 ] || fail "dynamic op: not one line: $(cat "$tmp/err")"
grep -q "^memsim record: values_dynop.py:15: the operator mylib::keep returns a size that depends on its inputs' values.*--values cpu.*; no trace written$" "$tmp/err" ||
	fail "dynamic op message: $(cat "$tmp/err")"
$MEMSIM record --values cpu -o "$tmp/d.csv" -- "$PY" "$R/values_dynop.py" mylib::keep 2>"$tmp/err" ||
	fail "record dynamic op cpu: $(tail -3 "$tmp/err")"
# the recorder's own generator, seeded 0, draws x
n=$("$PY" -c 'import torch; g = torch.Generator(); g.manual_seed(0); print(int((torch.randn(200, generator=g) > 0).sum()))')
grep -q "^kept $n$" "$tmp/err" || fail "dynamic op cpu (want $n): $(cat "$tmp/err")"
[ "$(sizes "$tmp/d.csv" values_dynop.py:15)" = "$((n * 8))" ] || fail "dynamic op cpu size"
# Ranges of bounded ops (tanh [-1, 1], sigmoid [0, 1]) and of exp: a
# Normal's scale exp(tanh(...) scaled into [-5, 2]) is positive, its
# check passes; values that cross to the host are their ranges' midpoints.
$MEMSIM record -o "$tmp/b.csv" -- "$PY" "$R/values_bounded.py" 2>"$tmp/err" ||
	fail "record bounded: $(tail -3 "$tmp/err")"
grep -q "^action (1, 1) 0.0 0.5$" "$tmp/err" || fail "bounded: $(cat "$tmp/err")"
grep -q "; 3 assumptions (finite 1, host:range 2)$" "$tmp/err" ||
	fail "bounded assumptions: $(cat "$tmp/err")"

# A range times a mask's, in either order (values.py: mul of two ranges).
$MEMSIM record -o "$tmp/mr.csv" -- "$PY" "$R/values_masked_range.py" 2>"$tmp/err" ||
	fail "record masked range: $(tail -3 "$tmp/err")"
[ "$(grep -c "^True True$" "$tmp/err")" = 2 ] || fail "masked range: $(cat "$tmp/err")"
grep -q "; 6 assumptions (range:max 3, range:min 3)$" "$tmp/err" ||
	fail "masked range assumptions: $(cat "$tmp/err")"

# .tolist() of a GPU tensor over 1 MiB (it stays fake on .cpu()): one host
# copy, one assumption; it was an .item() per element, stopped at 100000.
$MEMSIM record -o "$tmp/tl.csv" -- "$PY" "$R/values_tolist.py" 2>"$tmp/err" ||
	fail "record tolist: $(tail -3 "$tmp/err")"
grep -q "^tolist 300000 {1}$" "$tmp/err" || fail "tolist: $(cat "$tmp/err")"
grep -q "; 2 assumptions (host:int 1, host:large-stays-fake 1)$" "$tmp/err" ||
	fail "tolist assumptions: $(cat "$tmp/err")"

# --values cpu: a Linear's output on a 3-D input not contiguous (its bias
# added in place) keeps its values: the boolean index by its mask has the
# CPU's own count (it stopped with DynamicOutputShapeException before).
$MEMSIM record --values cpu -o "$tmp/lin.csv" -- "$PY" "$R/values_linear3d.py" 2>"$tmp/err" ||
	fail "record linear3d: $(tail -3 "$tmp/err")"
n=$(sed -n 's/^linear3d \([0-9]*\) \1$/\1/p' "$tmp/err")
[ -n "$n" ] || fail "linear3d counts: $(cat "$tmp/err")"
[ "$(sizes "$tmp/lin.csv" values_linear3d.py:17)" = "128 $((n * 8))" ] || fail "linear3d size (arange, index)"
$MEMSIM record -o "$tmp/d.csv" -- "$PY" "$R/values_dynop.py" torchvision::nms 2>"$tmp/err" ||
	fail "record nms: $(tail -3 "$tmp/err")"
[ "$(sizes "$tmp/d.csv" values_dynop.py:15)" = "800" ] || fail "nms size"
grep -q ',assumption,nms values_dynop.py:15 =100$' "$tmp/d.csv" || fail "nms assumption"

finish recorder_values.sh
