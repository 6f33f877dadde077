#!/bin/sh
# memsim record --fake: torch.utils.cpp_extension.CUDA_HOME is what a
# CUDA build of PyTorch finds (_find_cuda_home: $CUDA_HOME or $CUDA_PATH,
# nvcc's folder, /usr/local/cuda), not the None of the CPU build that
# records (its CUDA_HOME is found only where torch.cuda._is_compiled()).
# xLSTM's sLSTM imports include_paths(device_type="cuda") when
# torch.cuda.is_available(), at import time, even for its vanilla
# backend; with CUDA_HOME None that raised OSError.  Needs Python 3 and
# PyTorch; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/p.py" <<'PY'
import torch
import torch.utils.cpp_extension as ce
assert torch.cuda.is_available()
print("home", ce.CUDA_HOME)
print("include", ce.include_paths(device_type="cuda")[-1])
x = torch.ones(4, device="cuda")
PY
CUDA_HOME=/opt/some-cuda $MEMSIM record --fake -o "$tmp/a.csv" -- "$PY" "$tmp/p.py" \
	>"$tmp/err" 2>&1 || fail "record: $(tail -3 "$tmp/err")"
for want in "home /opt/some-cuda" "include /opt/some-cuda/include"; do
	grep -qx "$want" "$tmp/err" || fail "'$want' not in: $(cat "$tmp/err")"
done
finish recorder_cudahome.sh
