#!/bin/sh
# memsim record --fake --values cpu: torch.histc of an integer CUDA
# tensor.  The CUDA build counts every type (_histc_cuda, the output of
# the input's type), the CPU's kernel floating types only, so its values
# were lost (values:unknown "histogram_cpu" not implemented for 'Int')
# and with them every size made from them: Transformers' MoE experts
# (integrations/moe.py, the grouped_mm path) count the tokens of each
# expert so, from int32 expert ids, and its fallback's backward cuts
# its GEMMs at the counts (offs.tolist()).  Now computed as CUDA's
# getBin does, in integer arithmetic (Values' FALLBACK).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
torch.manual_seed(0)
ids = torch.randint(0, 8, (4096,))
ids[:700] = 3                     # one expert far above the others
ref = torch.bincount(ids, minlength=8)
h = torch.histc(ids.cuda().int(), bins=8, min=0, max=7)
print("dtype", h.dtype)
print("counts", " ".join(map(str, h.tolist())), "|",
      " ".join(map(str, ref.tolist())))
# min == max: the data's own range (1..6 over 3 bins: 1,2 | 3,4 | 5,6)
w = torch.tensor([1, 2, 2, 3, 4, 5, 6, 6, 6], dtype=torch.int64)
h2 = torch.histc(w.cuda(), bins=3)
print("range", " ".join(map(str, h2.tolist())))
# a buffer the size of the largest expert's rows, as a grouped GEMM's
# fallback cuts its inputs
big = torch.empty(int(h.max()) * 1024, device="cuda")
print("rows", big.numel() // 1024)
PY
(cd "$tmp" && $MEMSIM record --fake --values cpu -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "recording: $(tail -3 "$tmp/err")"
grep -qxF "dtype torch.int32" "$tmp/err" || fail "dtype: $(cat "$tmp/err")"
line=$(grep "^counts " "$tmp/err") || fail "no counts: $(cat "$tmp/err")"
got=${line#counts }
[ "${got% | *}" = "${got#* | }" ] || fail "counts: $line (the CPU's last)"
grep -qxF "range 3 2 4" "$tmp/err" || fail "range: $(grep '^range' "$tmp/err")"
max=$("$PY" -c 'import torch; torch.manual_seed(0); i = torch.randint(0, 8, (4096,)); i[:700] = 3; print(int(torch.bincount(i).max()))')
grep -qxF "rows $max" "$tmp/err" || fail "rows: $(grep '^rows' "$tmp/err"), want $max"
grep -q ",alloc,[0-9]*,$((max * 4096))," "$tmp/a.csv" || \
	fail "no buffer of $max rows in the trace"
$MEMSIM info "$tmp/a.csv" >"$tmp/info" 2>&1 || fail "info: $(cat "$tmp/info")"
grep -q 'values:unknown' "$tmp/info" && \
	fail "values lost: $(grep 'values:unknown' "$tmp/info")"
finish recorder_histc_int.sh
