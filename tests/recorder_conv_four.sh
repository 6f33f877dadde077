#!/bin/sh
# memsim record --fake: cuDNN's workspace for a half-precision NCHW
# convolution over four input channels (a latent diffusion model's
# latents, RGBA): the input and weight with their channels padded to 4
# (fp16) or 8 (bf16), the output, 16 bytes; a 4x4 kernel of stride 4
# takes none (kernels.conv; validate/device/patch_probe.py's 600
# few-channel convolutions on an H100, tests/data/record/conv_few.tsv:
# every four-channel half-precision one, 73).  Before, no convolution of
# fewer than 8 channels had one.  The sizes are the H100's (PyTorch
# 2.11, cuDNN 9.19).  Needs Python 3 and PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
PYTHONPATH="$SRC/traces" "$PY" - "${MSIM_TESTDATA:-tests/data}/record/conv_few.tsv" >"$tmp/few" 2>&1 <<'PY' ||
import sys
from memsim_record import kernels
ok = n = 0
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if line.startswith(("#", "n\t")) or f[1] != "4" or f[7] == "fp32":
        continue
    b, c, h, k, r, s, p = (int(v) for v in f[:7])
    o = (h + 2 * p - r) // s + 1
    ev = kernels.conv("forward", (b, c, h, h), (k, c, r, r), (b, k, o, o), 2,
                      (s, s), (p, p), (1, 1), False, 1, False, False, 9,
                      bf16=f[7] == "bf16")
    n += 1
    ok += (ev[0][2] if ev else 0) == max(int(v) for v in f[8].split(","))
print("%d/%d" % (ok, n))
PY
	fail "the probe's rows: $(cat "$tmp/few")"
[ "$(cat "$tmp/few")" = "73/73" ] || fail "the probe's four-channel rows: $(cat "$tmp/few")"
cat >"$tmp/c4.py" <<'PY'
import torch
def run(n, h, k, r, s, p, dt):
    x = torch.randn(n, 4, h, h, device="cuda")
    conv = torch.nn.Conv2d(4, k, r, stride=s, padding=p, bias=False).cuda()
    with torch.autocast("cuda", dtype=dt):
        return conv(x)
run(8, 96, 192, 3, 2, 1, torch.float16)
run(4, 128, 32, 7, 2, 3, torch.bfloat16)
run(2, 128, 128, 4, 4, 0, torch.bfloat16)
PY
$MEMSIM record --fake --device h100-80gb -o "$tmp/c4.csv" -- "$PY" "$tmp/c4.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $8 ~ /workspace/ { printf "%s ", $5 }' "$tmp/c4.csv")
[ "$got" = "7681552 2122256 " ] || fail "workspaces: '$got', the H100's '7681552 2122256 '"
finish recorder_conv_four.sh
