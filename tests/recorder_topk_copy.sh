#!/bin/sh
# memsim record --fake: topk_out_cuda's launch_gather_topk_kernel selects
# from self.contiguous(), a copy of a non-contiguous input made after the
# values and indices and freed on return.  lucidrains' routing-transformer
# takes each cluster's top tokens along the sequence of an einsum's
# permuted output (4 x 4 x 4096 x 32 floats): the H200's snapshot has an
# 8 MiB copy at each such topk that the recording lacked.  No copy of a
# contiguous input, nor on should_use_sort's path (at most 10 slices of
# 100000 or more elements: a whole sort instead).
# Needs Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/a.py" <<'PY'
import torch
x = torch.randn(4, 4, 32, 4096, device="cuda").transpose(-1, -2)
v, i = x.topk(128, dim=-2)
v, i = x.transpose(-1, -2).topk(8)
w = torch.randn(2, 200000, device="cuda").t()
torch.topk(w, 5, dim=0)
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" a.py) \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
got=$(copies_seq "$tmp/a.csv")
# x; its top 128 along the sequence: values (4*4*128*32*4), indices
# (twice that), the copy of x (8388608c), freed; the top 8 along the
# contiguous last dimension: values and indices alone; w and its top 5
# of two slices of 200000 (the sort path): values and indices alone.
want="8388608 262144 524288 8388608c - 16384 32768 1600000 40 80"
[ "$got" = "$want" ] || fail "copies: $got"
finish recorder_topk_copy.sh
