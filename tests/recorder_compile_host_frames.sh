#!/bin/sh
# memsim record --fake: a compiled function that copies a tensor to the
# host and takes its values (x.cpu().tolist(), .numpy(), formatting, its
# data_ptr) records, as on the GPU.  Dynamo breaks the graph there and
# runs the frame eagerly, its frame hook seeing every Python frame the
# frame calls; Tensor.tolist and the other methods are C++ in PyTorch
# (no frame), the recorder's replacements of them are Python, and Dynamo
# compiled those as frames of their own: the process aborted ("terminate
# called after throwing an instance of 'python_error'", signal 6, no
# trace).  BlinkDL/RWKV-LM's RWKV-8 ROSA trainers
# (251014_rosa_onlyemb_train.py: torch.compile of a model whose forward
# runs rosa_torch, z.detach().contiguous().cpu() then .tolist() of each
# row) stopped so.  The script prints the same lines on the GPU.  Needs
# Python 3 and PyTorch; skips (77) without them.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/s.py" <<'PY'
import torch
from torch import nn


def rows(z):
    zc = z.detach().contiguous().cpu()
    n = zc.numpy().shape[0]
    ptr = zc.data_ptr() != 0
    return torch.stack([torch.as_tensor([v % 3 for v in r.tolist()])
                        for r in zc]).to(z.device), n, ptr


class M(nn.Module):
    def __init__(s):
        super().__init__()
        s.e = nn.Embedding(11, 8)
        s.o = nn.Linear(8, 11)

    def forward(s, x):
        idx, n, ptr = rows(x)
        return s.o(s.e(x) + s.e(idx)), n, ptr


m = torch.compile(M().cuda())
x = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]], device="cuda")
y, n, ptr = m(x)
y.sum().backward()
print("out", tuple(y.shape), n, ptr, f"{x.sum():d}")
PY
(cd "$tmp" && $MEMSIM record --fake -o "$tmp/s.csv" -- "$PY" s.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -qx "out (2, 4, 11) 2 True 36" "$tmp/out" ||
	fail "the compiled model's output: $(grep -v '^memsim' "$tmp/out" | head -3)"
[ -s "$tmp/s.csv" ] || fail "no trace"
finish recorder_compile_host_frames.sh
