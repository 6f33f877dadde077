#!/bin/sh
# memsim record --fake, mm and addmm of GPU matrices of two dtypes:
# addmm_out_cuda_impl refuses them ("expected mat1 and mat2 to have the
# same dtype"), and so does the recording now; mm's meta function does
# not check, so F.linear of a float32 input with a bfloat16 weight ran in
# the recording where the GPU's run stops (llama-models' Llama 4 with
# attn_temperature_tuning, whose float32 scales make its NoPE layers'
# queries float32).  Under autocast the inputs are cast first and the
# product runs.  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/mm.py" <<'PY'
import torch
w = torch.randn(8, 16, dtype=torch.bfloat16, device="cuda")
x = torch.randn(3, 16, device="cuda")
b = torch.randn(8, dtype=torch.bfloat16, device="cuda")
cases = {"mm": lambda: torch.mm(x, w.t()),
         "linear": lambda: torch.nn.functional.linear(x, w),
         "linear3d": lambda: torch.nn.functional.linear(x.view(1, 3, 16), w),
         "addmm": lambda: torch.nn.functional.linear(x, w, b),
         "same": lambda: torch.nn.functional.linear(x.bfloat16(), w, b)}
for k, f in cases.items():
    try:
        print(k, "ok", f().dtype)
    except RuntimeError as e:
        print(k, "error", str(e).split(",")[0])
with torch.autocast("cuda", dtype=torch.bfloat16):
    print("autocast ok", torch.nn.functional.linear(x, w).dtype)
PY
(cd "$tmp" && $MEMSIM record --fake -o mm.csv -- "$PY" mm.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
for k in mm linear linear3d addmm; do
	grep -q "^$k error expected mat1 and mat2 to have the same dtype" "$tmp/out" ||
		fail "$k: $(cat "$tmp/out")"
done
grep -q "^same ok torch.bfloat16" "$tmp/out" || fail "same: $(cat "$tmp/out")"
grep -q "^autocast ok torch.bfloat16" "$tmp/out" || fail "autocast: $(cat "$tmp/out")"
finish recorder_mm_dtypes
