#!/bin/sh
# Kernels' own temporaries under memsim record --fake
# (traces/memsim_record/kernels.py): the rules against the workspaces
# measured on the H200 (tests/data/record/conv_ws.tsv, sdpa_ws.tsv) and the
# H100 (conv_wgrad1x1_h100.tsv, lstsq_h100.tsv), hand-
# made cases with exact bytes, and, where PyTorch is installed, the rows a
# recording writes.  Needs Python 3; skips (77) without it.
set -u
MEMSIM=${MEMSIM:-./memsim}
DATA=${MSIM_TESTDATA:-tests/data}/record
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=${MEMSIM_PYTHON:-python3}
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d /tmp/memsim-kernels-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The rules on the measured grids.  Convolutions: the rules were chosen on
# the "fit" half; on the "held" half, per call kind, the sum of the
# predicted workspaces against the measured one, the calls within 10% or
# 1 MiB, those of 64 MiB or more within 10% (docs/recording.md quotes these),
# and the calls whose workspace is the same block as the caching allocator
# rounds it (512 bytes: cuDNN's 16 bytes beyond the operands count).
# The backward-weight grid (conv_wgrad.tsv, NCHW) the same, per precision.
# Real programs' convolutions (conv_real_ws.tsv): the sum and the calls in
# the same block, per phase.
PYTHONPATH="$SRC/traces" python3 - "$DATA" >"$tmp/grid" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
data = sys.argv[1]
def rows(name):
    with open(data + "/" + name) as fp:
        lines = [l.rstrip("\n").split("\t") for l in fp if not l.startswith("#")]
    head = lines[0]
    return [dict(zip(head, l)) for l in lines[1:]]
def total(ev):
    return sum(e[2] for e in ev if e[0] == "alloc")
for half in ("fit", "held"):
    for col, phase in (("forward", "forward"), ("data", "data"), ("weight", "weight")):
        meas = pred = n = within = big = bigok = same = 0
        for r in rows("conv_ws.tsv"):
            if r["half"] != half:
                continue
            n_, c, h, k, rr, s = (int(r[x]) for x in ("n", "c", "h", "k", "r", "s"))
            es = 4 if r["dtype"] == "fp32" else 2
            ho = (h + 2 * (rr // 2) - rr) // s + 1
            p = total(kernels.conv(phase, (n_, c, h, h), (k, c, rr, rr),
                                   (n_, k, ho, ho), es, (s, s), (rr // 2,) * 2,
                                   (1, 1), False, 1, r["cl"] == "1", False, 9,
                                   bf16=r["dtype"] == "bf16"))
            m = int(r[col])
            meas += m; pred += p; n += 1
            within += abs(p - m) <= max(0.1 * m, 1 << 20)
            # the same block as the caching allocator rounds it (512 B)
            same += (p + 511) // 512 == (m + 511) // 512
            if m >= 64 << 20:
                big += 1; bigok += abs(p - m) <= 0.1 * m
        print("%s %s n=%d sum %+.1f%% within %d%% big %d/%d block %d" % (
            half, phase, n, 100.0 * (pred - meas) / meas,
            round(100.0 * within / n), bigok, big, same))
for half in ("fit", "held"):
    for name, dts in (("half", ("fp16", "bf16")), ("fp32", ("fp32",))):
        meas = pred = n = within = big = bigok = 0
        for r in rows("conv_wgrad.tsv"):
            if r["half"] != half or r["dtype"] not in dts:
                continue
            n_, c, h, k, rr, s = (int(r[x]) for x in ("n", "c", "h", "k", "r", "s"))
            es = 4 if r["dtype"] == "fp32" else 2
            ho = (h + 2 * (rr // 2) - rr) // s + 1
            p = total(kernels.conv("weight", (n_, c, h, h), (k, c, rr, rr),
                                   (n_, k, ho, ho), es, (s, s), (rr // 2,) * 2,
                                   (1, 1), False, 1, False, False, 9, 132))
            m = int(r["weight"])
            meas += m; pred += p; n += 1
            within += abs(p - m) <= max(0.1 * m, 1 << 20)
            if m >= 64 << 20:
                big += 1; bigok += abs(p - m) <= 0.1 * m
        print("wgrad %s %s n=%d sum %+.1f%% within %d%% big %d/%d" % (
            half, name, n, 100.0 * (pred - meas) / meas,
            round(100.0 * within / n), bigok, big))
# 1x1 stride-1 backward-weight on an H100 (conv_wgrad1x1_h100.tsv): the
# calls whose predicted workspace is the measured one, the sums
for name, dts in (("half", ("fp16", "bf16")), ("fp32", ("fp32",))):
    meas = pred = n = exact = 0
    for r in rows("conv_wgrad1x1_h100.tsv"):
        if r["dtype"] not in dts:
            continue
        n_, c, h, k = (int(r[x]) for x in ("n", "c", "h", "k"))
        es = 4 if r["dtype"] == "fp32" else 2
        p = total(kernels.conv("weight", (n_, c, h, h), (k, c, 1, 1),
                               (n_, k, h, h), es, (1, 1), (0, 0), (1, 1),
                               False, 1, False, False, 9, 132))
        m = int(r["weight"])
        meas += m; pred += p; n += 1; exact += p == m
    print("wgrad1x1 h100 %s n=%d sum %+.1f%% exact %d" % (
        name, n, 100.0 * (pred - meas) / meas, exact))
exact = n = 0
for r in rows("sdpa_ws.tsv"):
    if r["backend"] != "cudnn":
        continue
    b, h, s, d = (int(r[x]) for x in ("b", "h", "s", "d"))
    ev = kernels.attention_backward("cudnn", b, h, s, d, 2)
    n += 1
    exact += [e[2] for e in ev if e[0] == "alloc"] == [int(r["temps"])]
print("cudnn attention backward exact %d/%d" % (exact, n))
# Real programs' fp32 NCHW convolutions (conv_real_ws.tsv, H200 snapshots
# matched to the recordings' calls), per phase: the calls (weighted by how
# often each ran), the sum of the predicted workspaces against the real
# one and the calls in the same 512-byte block.
for phase in ("forward", "data", "weight"):
    meas = pred = n = same = 0
    for r in rows("conv_real_ws.tsv"):
        if r["phase"] != phase:
            continue
        n_, c, h, w, k, rr, ss, st, pd, calls = (int(r[x]) for x in (
            "N", "C", "H", "W", "K", "R", "S", "stride", "padding", "calls"))
        ho = (h + 2 * pd - rr) // st + 1
        wo = (w + 2 * pd - ss) // st + 1
        p = total(kernels.conv(phase, (n_, c, h, w), (k, c, rr, ss),
                               (n_, k, ho, wo), 4, (st, st), (pd, pd),
                               (1, 1), False, 1, False, False, 9, 132))
        m = int(r["real"])
        meas += m * calls; pred += p * calls; n += calls
        same += calls * ((p + 511) // 512 == (m + 511) // 512)
    print("real %s n=%d sum %+.1f%% block %d" % (
        phase, n, 100.0 * (pred - meas) / meas, same))
for kind in ("eff", "flash"):
    ok = n = 0
    for r in rows("sdpa_ws.tsv"):
        if r["backend"] != kind:
            continue
        b, h, s, d = (int(r[x]) for x in ("b", "h", "s", "d"))
        es = 4 if r["dtype"] == "fp32" else 2
        ev = kernels.attention_backward(
            "efficient" if kind == "eff" else "flash", b, h, s, d, es)
        p = sorted(e[2] for e in ev if e[0] == "alloc")
        m = sorted(int(x) for x in r["temps"].split(",")) if r["temps"] != "-" else []
        n += 1
        ok += p == m
    print("%s attention backward exact %d/%d" % (kind, ok, n))
# The memory-efficient (and flash) backward op alone on the H200
# (sdpa_eff_bwd.tsv): every allocation and free in order, the outputs
# (grad_q, grad_k, grad_v, the bias's gradient padded to 16) then the
# kernel's events; and the kernel the profiler saw is the one
# efficient_kernel() picks.
ok = n = kok = kn = 0
bad = []
for r in rows("sdpa_eff_bwd.tsv"):
    b, h, m, nk, d, dv = (int(r[x]) for x in ("b", "h", "m", "n", "d", "dv"))
    es = 4 if r["dtype"] == "fp32" else 2
    drop = float(r["dropout"]) != 0
    kind = "efficient" if r["backend"] == "eff" else "flash"
    outs = [b * m * h * d * es, b * nk * h * d * es, b * nk * h * dv * es]
    if r["bias"] == "grad":
        outs.append(b * h * m * ((nk + 15) // 16 * 16) * es)
    ev = ["+%d" % x for x in outs]
    live = {}
    for e in kernels.attention_backward(kind, b, h, m, d, es, sk=nk, dv=dv,
                                        dropout=drop):
        if e[0] == "alloc":
            live[e[1]] = e[2]
            ev.append("+%d" % e[2])
        else:
            ev.append("-%d" % live.pop(e[1]))
    n += 1
    if ",".join(ev) == r["events"]:
        ok += 1
    else:
        bad.append(" ".join(r[x] for x in ("dtype", "b", "h", "m", "n", "d", "dv")))
    if kind == "efficient":
        kn += 1
        kok += ("_%dx%d_k%d_" % kernels.efficient_kernel(
            es < 4, m, nk, d, dv, drop)) in r["kernel"]
print("efficient backward events exact %d/%d kernels %d/%d %s" % (
    ok, n, kok, kn, "; ".join(bad[:3])))
# cuSOLVER's geqrf and ormqr workspaces in lstsq's looped path on an H100
# (lstsq_h100.tsv): the calls whose predicted workspace is the measured
# one, ormqr's also for 257 rows or more, and its worst call's error
g = o = big = nbig = n = 0
worst = 0.0
for r in rows("lstsq_h100.tsv"):
    m, k, nrhs = (int(r[x]) for x in ("m", "n", "nrhs"))
    es = 4 if r["dtype"] == "fp32" else 8
    g += kernels.geqrf_workspace_bytes(min(m, k), es) == int(r["geqrf"])
    p = kernels.ormqr_workspace_bytes(max(m, k), min(m, k), nrhs, es)
    o += p == int(r["ormqr"])
    if max(m, k) >= 257:
        nbig += 1
        big += p == int(r["ormqr"])
    worst = max(worst, abs(p - int(r["ormqr"])) / int(r["ormqr"]))
    n += 1
print("lstsq h100 n=%d geqrf exact %d ormqr exact %d (257 rows or more %d/%d)"
      " worst %.1f%%" % (n, g, o, big, nbig, 100 * worst))
PY
	fail "grid: $(cat "$tmp/grid")"
cat >"$tmp/want" <<'EOF2'
fit forward n=300 sum -0.8% within 86% big 32/37 block 195
fit data n=300 sum -2.6% within 93% big 37/38 block 230
fit weight n=300 sum -2.4% within 63% big 35/50 block 68
held forward n=300 sum +1.8% within 91% big 38/40 block 188
held data n=300 sum +2.7% within 92% big 40/41 block 220
held weight n=300 sum -1.3% within 65% big 37/53 block 47
wgrad fit half n=310 sum -3.4% within 73% big 47/55
wgrad fit fp32 n=102 sum -21.4% within 47% big 15/29
wgrad held half n=308 sum -2.7% within 73% big 45/55
wgrad held fp32 n=101 sum -17.9% within 50% big 14/20
wgrad1x1 h100 half n=200 sum -3.2% exact 168
wgrad1x1 h100 fp32 n=100 sum +1.7% exact 52
cudnn attention backward exact 139/139
real forward n=793 sum +24.9% block 537
real data n=185 sum +0.1% block 135
real weight n=290 sum -17.2% block 0
eff attention backward exact 136/136
flash attention backward exact 71/71
efficient backward events exact 700/700 kernels 686/686 
lstsq h100 n=4130 geqrf exact 4130 ormqr exact 3906 (257 rows or more 3280/3280) worst 5.3%
EOF2
diff "$tmp/want" "$(echo "$tmp/grid")" | grep '^<' >"$tmp/d" && fail "grid figures: $(cat "$tmp/d")"

# Hand-made cases, exact bytes.  Conv2d(16, 32, 3, padding=1) on
# (4, 16, 32, 32) fp32, NCHW: input 262144 + weight 18432 + output 524288
# + 16 bytes forward, backward-data and backward-weight (N*P*Q = 4096:
# sqrt(4096) / 42 = 1 slice, no split-K).  channels_last: the weight copy
# forward; fp32 backward-weight adds input and output.  1x1 stride 1:
# nothing forward.  Split-K: Conv2d(128, 128, 3) on (64, 128, 64, 64)
# fp16, 9 tiles, sqrt(262144) / 42 = 12 slices of 128 x 1152 fp32 partial
# sums (7077888) on input + weight + output (134512640); on 8 SMs, 2 * 8 /
# 9 = 1 slice: none.  Conv2d(512, 512, 3) on (16, 512, 32, 32): 144
# tiles fill 132 SMs, none (input + weight + output).  cuDNN attention
# backward, (2, 4, 128, 64):
# 2*4*128*64*4 + 2*4*128*4 + 256.
PYTHONPATH="$SRC/traces" python3 - >"$tmp/hand" 2>&1 <<'PY' ||
from memsim_record import kernels as k
a = ((4, 16, 32, 32), (32, 16, 3, 3), (4, 32, 32, 32), 4, (1, 1), (1, 1), (1, 1), False, 1)
print(k.conv("forward", *a, False, False, 9))
print(k.conv("data", *a, False, False, 9))
print(k.conv("weight", *a, False, False, 9))
print(k.conv("forward", *a, True, False, 9))
print(k.conv("forward", (4, 16, 32, 32), (32, 16, 1, 1), (4, 32, 32, 32), 4, (1, 1), (0, 0), (1, 1), False, 1, False, False, 9))
print(k.conv("forward", *a[:-1], 4, False, False, 9))
print(k.conv("forward", *a, False, False, 6))
print(k.conv("weight", *a, True, False, 9))
b = ((64, 128, 64, 64), (128, 128, 3, 3), (64, 128, 64, 64), 2, (1, 1), (1, 1), (1, 1), False, 1, False, False, 9)
print(k.conv("weight", *b))
print(k.conv("weight", *b, 8))
print(k.conv("weight", (16, 512, 32, 32), (512, 512, 3, 3), (16, 512, 32, 32), 2, (1, 1), (1, 1), (1, 1), False, 1, False, False, 9))
print(k.attention_backward("cudnn", 2, 4, 128, 64, 2))
PY
	fail "hand: $(cat "$tmp/hand")"
cat >"$tmp/want" <<'EOF2'
[('alloc', 'ws', 804880), ('free', 'ws')]
[('alloc', 'ws', 804880), ('free', 'ws')]
[('alloc', 'ws', 804880), ('free', 'ws')]
[('alloc', 'ws', 18432), ('free', 'ws')]
[]
[]
[]
[('alloc', 'ws', 804864), ('free', 'ws')]
[('alloc', 'ws', 141590544), ('free', 'ws')]
[('alloc', 'ws', 134512656), ('free', 'ws')]
[('alloc', 'ws', 38273040), ('free', 'ws')]
[('alloc', 'ws', 266496), ('free', 'ws')]
EOF2
cmp -s "$tmp/want" "$tmp/hand" || fail "hand-made cases: $(diff "$tmp/want" "$tmp/hand")"

# Reductions (gpu_reduce_kernel's global buffer and semaphores), against
# the buffers of the H200 snapshots (docs/recording.md): vit's bias gradients (bf16
# 6304 x 3072 and 6304 x 768), its patch convolution's bias gradient (a
# 32 x 768 x 14 x 14 gradient with channels_last strides), moe's and the
# encoder-decoder's output-layer bias (fp32 2048 x 8000, 1024 x 8000);
# a small sum needs none.
PYTHONPATH="$SRC/traces" python3 - >"$tmp/red" 2>&1 <<'PY' ||
from memsim_record import kernels as k
for shape, strides, dims, es in (((6304, 3072), (3072, 1), {0}, 2),
                                 ((6304, 768), (768, 1), {0}, 2),
                                 ((32, 768, 14, 14), (150528, 1, 10752, 768), {0, 2, 3}, 2),
                                 ((2048, 8000), (8000, 1), {0}, 4),
                                 ((1024, 8000), (8000, 1), {0}, 4),
                                 ((64, 100), (100, 1), {0}, 4)):
    ev = k.reduce(shape, strides, dims, es, 4, 0, 9, 0, 132)
    print(" ".join(str(e[2]) for e in ev if e[0] == "alloc") or "-")
PY
	fail "reduce: $(cat "$tmp/red")"
printf '%s\n' "138412032 96" "38928384 24" "38535168 24" "131072000 252" \
	"65536000 252" "-" >"$tmp/want"
cmp -s "$tmp/want" "$tmp/red" || fail "reduce buffers: $(diff "$tmp/want" "$tmp/red")"
# launch_reduce_kernel frees its semaphores before its buffer (the
# reverse of their declaration; the gat program's H200 snapshot,
# tests/data/corpus/gat_h200.pickle).
got=$(PYTHONPATH="$SRC/traces" python3 -c '
from memsim_record import kernels as k
ev = k.reduce((2048, 8000), (8000, 1), {0}, 4, 4, 0, 9, 0, 132)
print(" ".join(e[0] + ":" + e[1] for e in ev))' 2>&1)
[ "$got" = "alloc:buffer alloc:semaphores free:semaphores free:buffer" ] ||
	fail "reduce order: $got"

# A recording: each workspace is an alloc of category temporary, site the
# kernel, freed by the next row; the sm90 rules are assumed on sm75 (t4).
if "$PY" -c 'import torch' 2>/dev/null; then
	cat >"$tmp/conv.py" <<'PY'
import torch
m = torch.nn.Conv2d(16, 32, 3, padding=1).cuda()
x = torch.randn(4, 16, 32, 32, device="cuda", requires_grad=True)
m(x).pow(2).sum().backward()
PY
	$MEMSIM record -o "$tmp/conv.csv" -- "$PY" "$tmp/conv.py" 2>"$tmp/err" ||
		fail "record conv: $(tail -3 "$tmp/err")"
	awk -F, '$7 == "temporary" && $8 ~ /^cudnn/ { print $5 "," $8 }' \
		"$tmp/conv.csv" >"$tmp/t"
	printf '%s\n' "804880,cudnn run_conv_plan workspace" \
		"804880,cudnn run_conv_plan workspace (backward)" \
		"804880,cudnn run_conv_plan workspace (backward)" >"$tmp/want"
	cmp -s "$tmp/want" "$tmp/t" || fail "conv temporaries: $(cat "$tmp/t")"
	bad=$(awk -F, '$7 == "temporary" && $8 ~ /^cudnn/ { a = $4; n = NR; next }
		n && NR == n + 1 { if ($3 != "free_completed" || $4 != a) print NR; n = 0 }' \
		"$tmp/conv.csv")
	[ -z "$bad" ] || fail "a workspace not freed by the next row: $bad"
	# The loss, a sum of 131072 floats, splits across 16 blocks (64 bytes
	# of partial sums and a 4-byte semaphore); the bias gradient, 4096
	# values a channel, does not.
	awk -F, '$8 == "gpu_reduce_kernel global buffer" { print $3 "," $5 }' \
		"$tmp/conv.csv" | tr '\n' ' ' >"$tmp/r"
	[ "$(cat "$tmp/r")" = "alloc,64 alloc,4 " ] ||
		fail "reduction buffers: $(cat "$tmp/r")"
	$MEMSIM record --device t4 -o "$tmp/t4.csv" -- "$PY" "$tmp/conv.py" \
		2>"$tmp/err" || fail "record t4: $(tail -3 "$tmp/err")"
	n=$(grep -c ',temporary,cudnn' "$tmp/t4.csv")
	[ "$n" -eq 3 ] || fail "t4 (sm75): $n conv workspaces, expected 3"
	# Memory-efficient attention backward through the recorder: fp32
	# (B, H, Sq, D) = (4, 2, 50, 100), 70 keys, values of head dimension
	# 40 (the query's layout a projection leaves).  The 128x64 k128
	# kernel (max(D, Dv) = 100): per batch and head one 128-query block
	# of ceil(100 / 64) = 2 GradQTempStorage, 2 * (16 + 128 * 64 * 4) =
	# 65568 bytes, 8 of them 524544; before it delta's product
	# (B, M, H, Dv) fp32 64000, its sum 1600 and the (B, H, M) copy 1600.
	cat >"$tmp/attn.py" <<'PY'
import torch
import torch.nn.functional as F
q = torch.randn(4, 50, 2, 100, device="cuda", requires_grad=True)
k = torch.randn(4, 70, 2, 100, device="cuda", requires_grad=True)
v = torch.randn(4, 70, 2, 40, device="cuda", requires_grad=True)
y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                   v.transpose(1, 2))
y.pow(2).sum().backward()
PY
	$MEMSIM record -o "$tmp/attn.csv" -- "$PY" "$tmp/attn.py" 2>"$tmp/err" ||
		fail "record attention: $(tail -3 "$tmp/err")"
	got=$(awk -F, '$3 == "alloc" && $8 == "_efficient_attention_backward temporaries" { printf "%s ", $5 }' "$tmp/attn.csv")
	[ "$got" = "64000 1600 1600 524544 " ] ||
		fail "efficient attention backward temporaries: $got"
fi
[ "$fails" -eq 0 ] || exit 1
echo "recorder kernels: ok"
