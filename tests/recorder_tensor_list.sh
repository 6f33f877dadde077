#!/bin/sh
# torch.tensor / torch.as_tensor of a list (nested, or a tuple) holding
# CUDA tensors builds a host tensor from their values: yolov5's detect.py
# writes each box as torch.tensor(xyxy), xyxy the 0-dim CUDA tensors of a
# detection's row.  PyTorch reads each element in C++ with the Python
# dispatch key excluded, so a fake element reached the GPU's
# _local_scalar_dense: a CPU build has no such kernel ("Could not run
# 'aten::_local_scalar_dense' with arguments from the 'CUDA' backend"), a
# CUDA build initializes CUDA ("Found no NVIDIA driver").  The elements
# are read as .cpu() reads them; the result is on the host with the
# elements' dtype, its values the known ones.  torch.jit.script sees
# them as the builtins aten::tensor and aten::as_tensor (before, it
# compiled the wrapper and failed in inspect.getfile).  Skips (77) without
# PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/tl.py" <<'PY'
import torch
det = torch.arange(12, device="cuda", dtype=torch.float32).view(2, 6)
for *xyxy, conf, cls in reversed(det):
    t = torch.tensor(xyxy)
    print("box", t.device.type, t.dtype, t.tolist())
h = torch.ones(3, device="cuda", dtype=torch.float16)
u = torch.as_tensor([(h[0], h[1]), (h[2], h[0])])
print("pairs", u.device.type, u.dtype, tuple(u.shape))
g = torch.tensor([h[0], 2.5], device="cuda")   # mixed, onto the GPU
@torch.jit.script   # TorchScript sees aten::tensor, not the wrapper
def scripted(x: float) -> torch.Tensor:
    return torch.tensor(x) + torch.as_tensor([x, x])
print("scripted", scripted(1.5).tolist())
print("mixed", g.device.type, g.dtype, tuple(g.shape))
PY
$MEMSIM record --fake -o "$tmp/tl.csv" -- "$PY" "$tmp/tl.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
for want in "box cpu torch.float32 [6.0, 7.0, 8.0, 9.0]" \
	"box cpu torch.float32 [0.0, 1.0, 2.0, 3.0]" \
	"pairs cpu torch.float16 (2, 2)" "mixed cuda torch.float32 (2,)" \
	"scripted [3.0, 3.0]"; do
	grep -qxF "$want" "$tmp/out" || fail "'$want' not in: $(cat "$tmp/out")"
done
finish recorder_tensor_list.sh
