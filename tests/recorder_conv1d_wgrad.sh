#!/bin/sh
# memsim record --fake: the weight gradient of a pointwise (kernel 1,
# stride 1) 1-d convolution, cuDNN's NCHW plan on the height-1 view
# (kernels.conv): on the H200 the engine keeps one fp32 partial weight
# gradient a sample, N * K * C * 4 bytes, up to N = 128
# (tests/data/record/conv1d_probe.json, validate/device/conv1d_probe.py:
# 57 of its 73 fp32 pointwise calls, every one over 256 KiB), where the
# 2-d rule's 16 partial sums gave half of Time-Series-Library's 128 MiB
# (its Transformer's feed-forward Conv1d(512, 2048, 1) at 32 sequences
# of 96: 134,217,728 bytes in the H200's snapshot and the probe); at 224
# sequences of 12 (its PAttn) the H200 took x + y + 16 (27,525,136
# bytes, the snapshot).  Needs Python 3 and PyTorch; skips (77) without
# them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
for n, L in ((32, 96), (224, 12)):
    conv = torch.nn.Conv1d(512, 2048, 1, bias=False).cuda()
    x = torch.randn(n, 512, L, device="cuda")
    conv(x).sum().backward()
    del conv, x
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(awk -F, '$3 == "alloc" && $8 ~ /workspace \(backward\)/ { print $5 }' "$tmp/a.csv" | tr '\n' ' ')
[ "$got" = "134217728 27525136 " ] || fail "weight-gradient workspaces: '$got'"
# the probe's measurements the rule stands on: N * K * C * 4 bytes for
# every fp32 pointwise call of the probe whose product exceeds 256 KiB
"$PY" - "$MSIM_TESTDATA/record/conv1d_probe.json" >"$tmp/probe" <<'PY' || fail "probe: $(cat "$tmp/probe")"
import json, sys
d = json.load(open(sys.argv[1]))
big = hit = 0
for c in d["calls"]:
    if "error" in c or c["dt"] != "fp32" or c["r"] != 1:
        continue
    part = c["n"] * c["k"] * c["c"] * 4
    if part <= 262144:
        continue
    big += 1
    hit += any(a[1] and abs(a[0] - part) <= 512 for a in c["bw"])
print(big, hit)
PY
read big hit <"$tmp/probe"
[ "$big" -gt 30 ] && [ "$hit" = "$big" ] || fail "probe: $hit of $big pointwise calls at N * K * C * 4"
finish recorder_conv1d_wgrad.sh
