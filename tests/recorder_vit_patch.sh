#!/bin/sh
# memsim record --fake: what a vision-language model's first layers ask
# of the caching allocator beyond their tensors, as the H100 snapshots of
# SigLIP, CLIP and Qwen2-VL showed (docs/corpus.md, thirty-sixth round).
# - cuDNN's weight-gradient workspace of a half-precision RGB patch
#   embedding (kernel = stride of 14 or 16, 128 or more channels out):
#   input and weight with their channels padded to 8, the output
#   gradient, 3 fp32 split-K partial weight gradients from 3136 outputs a
#   channel (kernels._patch_weight); before, x + w + y + 16.  Checked
#   against the H100 probes' rows (tests/data/record/conv_few.tsv,
#   conv_patch_h100.tsv: 26 of 36 and 70 of 80 to the byte, where the
#   rule before had 2 and 2); Qwen2-VL's Conv3d embedding (kernels.
#   _patch3d): conv_patch_h100.tsv's 80 forward calls (fp32, fp16,
#   bf16) to the byte (55 before), 14 of its 80 weight gradients (0).
# - masked_scatter_'s temporaries (maskPrefixSum, the broadcast mask's
#   contiguous copy, cub's scan storage; kernels.masked_scatter), none
#   before: every call of the H100 probe (tests/data/record/
#   masked_scatter_h100.tsv).
# Then a recording of them, sizes the H100's (PyTorch 2.11, cuDNN 9.19:
# this script run there under torch.cuda.memory's history).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
D=${MSIM_TESTDATA:-tests/data}/record
PYTHONPATH="$SRC/traces" "$PY" - "$D/conv_few.tsv" "$D/conv_patch_h100.tsv" \
	"$D/masked_scatter_h100.tsv" >"$tmp/rules" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
for path in sys.argv[1:3]:
    ok = n = 0
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if line.startswith(("#", "n\t", "op\t")):
            continue
        if path.endswith("conv_few.tsv"):
            b, c, h, k, r, s, p = (int(v) for v in f[:7])
        elif f[0] == "conv2d":
            b, c, h, t, r, k = (int(v) for v in f[1:7])
            s, p = r, 0
        else:
            continue
        dt, ws = f[7], f[9]
        if dt == "fp32" or c != 3 or r != s or p or r not in (14, 16) or \
                k < 128:
            continue
        o = (h + 2 * p - r) // s + 1
        ev = kernels.conv("weight", (b, c, h, h), (k, c, r, r),
                          (b, k, o, o), 2, (s, s), (p, p), (1, 1), False, 1,
                          False, False, 9, bf16=dt == "bf16")
        # the measured window holds the half-precision weight gradient
        # too (autocast's, cast to the fp32 parameter's)
        meas = [int(v) for v in ws.split(",")
                if int(v) not in (0, k * c * r * r * 2)]
        n += 1
        ok += (ev[0][2] if ev else 0) == (meas[-1] if meas else 0)
    print("%d/%d" % (ok, n), end=" ")
# Qwen2-VL's Conv3d embedding (kernels._patch3d): the forward's
# workspace and the weight gradient's
ok = [0, 0]
n = 0
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("\t")
    if line.startswith(("#", "op\t")) or f[0] != "conv3d":
        continue
    p, c, h, t, r, k = (int(v) for v in f[1:7])
    n += 1
    for i, phase in enumerate(("forward", "weight")):
        it = 4 if f[7] == "fp32" else 2
        ev = kernels.conv(phase, (p, c, t, r, r), (k, c, t, r, r),
                          (p, k, 1, 1, 1), it, (t, r, r), (0, 0, 0),
                          (1, 1, 1), False, 1, False, False, 9)
        meas = [int(v) for v in f[8 + i].split(",")
                if int(v) not in (0, k * c * t * r * r * 2)]
        ok[i] += (ev[0][2] if ev else 0) == (meas[-1] if meas else 0)
print("%d/%d %d/%d" % (ok[0], n, ok[1], n), end=" ")
ok = n = 0
for line in open(sys.argv[3]):
    f = line.rstrip("\n").split("\t")
    if line.startswith(("#", "dtype\t")):
        continue
    numel = int(f[1]) * int(f[2]) * int(f[3])
    got = [e[2] for e in kernels.masked_scatter(numel, numel, 0)
           if e[0] == "alloc"]
    n += 1
    ok += got == [int(v) for v in f[4].split(",")][1:]
print("%d/%d" % (ok, n))
PY
	fail "rules: $(tail -3 "$tmp/rules")"
[ "$(cat "$tmp/rules")" = "26/36 70/80 80/80 14/80 60/60" ] ||
	fail "the probes' rows (patch_probe, vit_patch_probe, its Conv3d forward and weight, masked_scatter): $(cat "$tmp/rules")"
cat >"$tmp/v.py" <<'PY'
import torch
# SigLIP's patch embedding of 32 images (bf16 autocast; the pixels do not
# require grad), then Qwen2-VL's placeholder scatter of 6 x 203 tokens
conv = torch.nn.Conv2d(3, 256, 16, stride=16).cuda()
x = torch.randn(32, 3, 224, 224, device="cuda")
with torch.autocast("cuda", dtype=torch.bfloat16):
    y = conv(x)
y.float().sum().backward()
emb = torch.zeros(6, 203, 256, device="cuda", dtype=torch.bfloat16)
ids = torch.randint(0, 4, (6, 203), device="cuda")
mask = (ids == 0).unsqueeze(-1).expand_as(emb)
src = torch.randn(6 * 203, 256, device="cuda", dtype=torch.bfloat16)
out = emb.masked_scatter(mask, src)
# Qwen2-VL's Conv3d embedding of 3072 patches, 128 channels, bf16
proj = torch.nn.Conv3d(3, 128, (2, 14, 14), stride=(2, 14, 14), bias=False)
proj = proj.cuda().to(torch.bfloat16)
with torch.no_grad():
    e = proj(torch.randn(3072, 3, 2, 14, 14, device="cuda", dtype=torch.bfloat16))
PY
$MEMSIM record --fake --device h100-80gb -o "$tmp/v.csv" -- "$PY" "$tmp/v.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $8 ~ /workspace/ { printf "%s ", $5 }' "$tmp/v.csv")
[ "$got" = "36241552 20070416 " ] ||
	fail "workspaces: '$got', the H100's '36241552 20070416 '"
# the scatter's temporaries, after its output
got=$(awk -F, '$3 == "alloc" && $8 ~ /^masked_scatter/ { printf "%s ", $5 }' "$tmp/v.csv")
[ "$got" = "2494464 311808 6655 " ] ||
	fail "masked_scatter: '$got', the H100's '2494464 311808 6655 '"
# masked_scatter's backward: the source's gradient is grad.masked_select
# of the broadcast mask (masked_scatter_backward; none of nonzero's
# temporaries before): the mask's copy, the count and cub's reduction,
# the indices, the selection's storage, the gradient, as in the H100
# snapshot of Qwen2-VL's Trainer (4 x 218 tokens, 152 of each an image's,
# 256 dimensions: 223232 4 21503 3735552 1279 622592)
cat >"$tmp/b.py" <<'PY'
import torch
emb = torch.zeros(4, 218, 256, device="cuda", requires_grad=True)
img = (torch.arange(218, device="cuda") < 152).expand(4, 218)
src = torch.randn(4 * 152, 256, device="cuda", requires_grad=True)
emb.masked_scatter(img.unsqueeze(-1).expand_as(emb), src).sum().backward()
PY
$MEMSIM record --fake --device h100-80gb -o "$tmp/b.csv" -- "$PY" "$tmp/b.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $8 ~ /masked_scatter_backward|MaskedScatterBackward0/ && $5 != 892928 { printf "%s ", $5 }' "$tmp/b.csv")
[ "$got" = "223232 4 21503 3735552 1279 622592 " ] ||
	fail "masked_scatter's backward: '$got', the H100's '223232 4 21503 3735552 1279 622592 '"
finish recorder_vit_patch.sh
