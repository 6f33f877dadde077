#!/bin/sh
# An operator of torch.library.custom_op with no fake of the program's
# (register_fake): the GPU runs its Python body (its CUDA or default
# kernel, CustomOpDef._backend_fns), whose own ops allocate as any
# others.  FakeTensorMode ran the fake PyTorch generates for an op that
# only mutates and returns None (utils.generate_trivial_fake_impl),
# which allocates nothing, and refused one that returns a tensor ("no
# fake impl registered").  scattermoe's scatter2scatter, group and
# groupXtY are such ops (their bodies launch Triton kernels); here the
# body's 64 MiB scratch and the second op's output are the GPU's.  An
# op with a fake of the program's keeps it (the body may call native
# code that a fake tensor cannot enter).  Skips (77) without PyTorch.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/co.py" <<'PY'
import torch

@torch.library.custom_op("probe::fill", mutates_args={"out"})
def fill(out: torch.Tensor, x: torch.Tensor) -> None:
    tmp = torch.empty(64 << 20, dtype=torch.uint8, device=x.device)
    out.copy_(x * 2)

@torch.library.custom_op("probe::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, x])

@torch.library.custom_op("probe::faked", mutates_args=())
def faked(x: torch.Tensor) -> torch.Tensor:
    big = torch.empty(32 << 20, dtype=torch.uint8, device=x.device)
    return x.clone()

@faked.register_fake
def _(x):
    return torch.empty_like(x)

x = torch.randn(1024, device="cuda")
o = torch.empty_like(x)
fill(o, x)
y = twice(x)
z = faked(x)
print("shapes", tuple(y.shape), tuple(z.shape))
PY
$MEMSIM record --fake -o "$tmp/co.csv" -- "$PY" "$tmp/co.py" \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -qxF "shapes (2048,) (1024,)" "$tmp/out" || fail "output: $(cat "$tmp/out")"
n64=$(awk -F, '$3 == "alloc" && $5 == 67108864' "$tmp/co.csv" | wc -l)
[ "$n64" -eq 1 ] || fail "fill's body: $n64 64 MiB requests, not 1"
n8=$(awk -F, '$3 == "alloc" && $5 == 8192' "$tmp/co.csv" | wc -l)
[ "$n8" -eq 1 ] || fail "twice's output: $n8 8 KiB requests, not 1"
n32=$(awk -F, '$3 == "alloc" && $5 == 33554432' "$tmp/co.csv" | wc -l)
[ "$n32" -eq 0 ] || fail "faked ran its body: $n32 32 MiB requests, not 0"
finish recorder_custom_op_body.sh
