#!/bin/sh
# memsim record --fake --device h100-80gb: the double backward's
# covering convolution of every call of validate/device/conv_hvp_probe.py
# on an H100 (tests/data/record/conv_hvp_h100.tsv: 27 layers, 3x3 of
# padding 1, batches 64 to 128, C -> K channels 16 -> 16, 32 -> 32 and
# 16 -> 32 at 32 x 32, 32 -> 32 and 64 -> 64 at 16 x 16, 64 -> 64 and
# 128 -> 128 at 8 x 8, 3 -> 16 at 32 x 32; cuDNN's heuristics and
# cudnn.benchmark): conv2d of the transposed input gradient (C x N x H x
# H) by the output gradient (K x N x H x H), as
# _convolution_double_backward computes the weight gradient.  Each
# call's window (the allocations freed within it: the input's
# contiguous copy, the output, the find's workspace, the plan's) is
# compared with the recording's, within 512 bytes a size: all 54
# (kernels.fft_covers: the FFT a candidate of the find for filters of
# 16 or more and of 8 where K*C is at most 4,096, the plan where K*C is
# 512 to 1,024 or C at most 4; before, a candidate from 16 and the plan
# from 32: 42, the 16 -> 16 layer's plan, 32 -> 32's at 16 x 16 and 64
# -> 64's find at 8 x 8 wrong at each batch).  The same probe's
# backward-weight calls (W) are not checked here (kernels.
# fft_weight_chosen and the backward-weight plans).  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import sys, threading, torch
import torch.nn.functional as F
rows = [l.split("\t") for l in open(sys.argv[1])
        if not l.startswith("#") and not l.startswith("n\t")]
def calls(i, n, c, k, h, bench):
    torch.backends.cudnn.benchmark = bench
    go = torch.randn(n, k, h, h, device="cuda")
    ggit = torch.randn(n, c, h, h, device="cuda").transpose(0, 1)
    got = go.transpose(0, 1).contiguous()
    torch.empty(1000 + i, dtype=torch.int8, device="cuda")  # (the window)
    F.conv2d(ggit, got, padding=1)
    torch.empty(999, dtype=torch.int8, device="cuda")
for i, f in enumerate(rows):
    # (a thread a call: each find the first of its thread, as the probe's)
    th = threading.Thread(target=calls, args=(i, *map(int, f[:4]),
                                              f[4] == "1"))
    th.start()
    th.join()
    torch.cuda.empty_cache()
PY
TSV="$MSIM_TESTDATA/record/conv_hvp_h100.tsv"
(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o "$tmp/r.csv" \
	-- "$PY" a.py "$TSV") >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
"$PY" - "$TSV" "$tmp/r.csv" >"$tmp/cmp" 2>&1 <<'PY' ||
import csv, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])
        if not l.startswith("#") and not l.startswith("n\t")]
wins, cur, lst, live = {}, None, None, {}
for e in csv.DictReader(open(sys.argv[2])):
    s = int(e["size"])
    if e["action"] == "alloc" and e["category"] == "input" and \
            999 <= s < 1000 + len(rows):
        if cur is not None:
            wins[cur] = [a[0] for a in lst if a[1]]
        cur, lst, live = s - 1000, [], {}
    elif e["action"] == "alloc" and lst is not None:
        live[e["addr"]] = len(lst)
        lst.append([s, 0])
    elif e["action"].startswith("free") and e["addr"] in live:
        lst[live.pop(e["addr"])][1] = 1
ok = 0
for i, f in enumerate(rows):
    meas = [int(v) for v in f[6].split(",")]
    rec = wins.get(i, [])
    if len(meas) == len(rec) and \
            all(abs(a - b) <= 512 for a, b in zip(meas, rec)):
        ok += 1
    else:
        print("differs:", " ".join(f[:5]), meas, rec)
print("agree", ok, "of", len(rows))
PY
	fail "compare: $(tail -3 "$tmp/cmp")"
grep -qx "agree 54 of 54" "$tmp/cmp" || fail "$(cat "$tmp/cmp")"
finish recorder_conv_hvp.sh
