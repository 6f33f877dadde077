#!/bin/sh
# memsim record --fake: torch.linalg.lstsq's looped path on CUDA (not
# cuBLAS's batched gels: more than 256 rows, or too few matrices), its
# libraries' requests (dispatch.py's Dispatch._gels_looped): geqrf's
# infos and, a matrix each, its workspace (kernels.
# geqrf_workspace_bytes), ormqr's likewise (ormqr_workspace_bytes), the
# batched trsm's two arrays of device pointers (fewer than 64 columns or
# more than 8 matrices), then _linalg_check_errors' bools (two for a
# single matrix).  Each call's requests are the H100's, as
# validate/device/lstsq_probe.py printed them (fp32 and fp64, m > n and
# m < n, batched and not), and tests/data/record/lstsq_h100.tsv, the
# probe's 4,130 calls, gives the two workspaces' rules their figures.
# pykan fits its splines so (lstsq of more than 256 samples); before,
# neither workspace was recorded.  Needs Python 3 and PyTorch; skips
# (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
torch.ones(8, 8, device="cuda") @ torch.ones(8, 8, device="cuda")
for dt, b, m, n, k in (
        (torch.float32, (), 300, 8, 1), (torch.float64, (), 4096, 32, 1),
        (torch.float32, (), 33, 64, 3), (torch.float32, (), 200, 257, 16),
        (torch.float32, (3,), 300, 8, 3), (torch.float32, (3,), 1000, 64, 3),
        (torch.float32, (), 513, 1024, 1)):
    A = torch.randn(b + (m, n), device="cuda", dtype=dt)
    B = torch.randn(b + (m, k), device="cuda", dtype=dt)
    torch.empty(7777777, dtype=torch.uint8, device="cuda")
    r = torch.linalg.lstsq(A, B)
    del r, A, B
PY
(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
# each call's requests, +size / -size, after the marker's free
"$PY" - "$tmp/a.csv" >"$tmp/got" <<'PY' || fail "windows"
import csv, sys
size, out = {}, []
for r in csv.reader(open(sys.argv[1])):
    if len(r) < 5 or r[2] not in ("alloc", "free_completed"):
        continue
    if r[2] == "alloc":
        size[r[3]] = int(r[4])
        tok = "+" + r[4]
    else:
        tok = "-%d" % size[r[3]]
    if tok == "+7777777":
        out.append([])
    elif out and tok != "-7777777":
        out[-1].append(tok)
for w in out:
    print(" ".join(w))
PY
# the H100's (validate/device/lstsq_probe.py's lines), up to the frees
# of A and B
cat >"$tmp/want" <<'EOF2'
+4 +1200 +9600 +32 +4 +3145856 -3145856 -4 +4 +582400 -582400 -4 +8 +8 -8 -8 -32 +4 -9600 +1 +1 -1 -1 -4
+4 +32768 +1048576 +256 +4 +6291584 -6291584 -4 +4 +9976064 -9976064 -4 +8 +8 -8 -8 -256 +8 -1048576 +1 +1 -1 -1 -4
+4 +768 +8448 +132 +8448 +4 +3145856 -3145856 -4 +8 +8 -8 -8 +4 +347904 -347904 -4 -8448 -132 -8448 +1 +1 -1 -1 -4
+4 +16448 +205600 +800 +205600 +4 +3145856 -3145856 -4 +4 +924928 -924928 -4 -205600 -800 -205600 +1 +1 -1 -1 -4
+12 +10800 +28800 +96 +4 +3145856 -3145856 +3145856 -3145856 +3145856 -3145856 -4 +4 +586496 -586496 +586496 -586496 +586496 -586496 -4 +24 +24 -24 -24 -96 +36 -28800 +1 -1 -12
+12 +36000 +768000 +768 +4 +3145856 -3145856 +3145856 -3145856 +3145856 -3145856 -4 +4 +1565824 -1565824 +1565824 -1565824 +1565824 -1565824 -4 -768 +36 -768000 +1 -1 -12
+4 +4096 +2101248 +2052 +2101248 +4 +4198528 -4198528 -4 +4 +4467968 -4467968 -4 -2101248 -2052 -2101248 +1 +1 -1 -1 -4
EOF2
i=0
while read -r want; do
	i=$((i + 1))
	got=$(sed -n "${i}p" "$tmp/got")
	case "$got" in
	"$want"*) ;;
	*) fail "call $i: $got, want $want" ;;
	esac
done <"$tmp/want"
grep -q ',assumption,linalg:workspace' "$tmp/a.csv" &&
	fail "assumptions: $(grep ',assumption,' "$tmp/a.csv")"
finish recorder_lstsq_workspace.sh
