#!/bin/sh
# memsim record --fake, scaled_dot_product_attention with a value head
# dimension other than the query's and key's (DeepSeek's multi-head latent
# attention: 192 for queries and keys, 128 for values; torchtitan's
# deepseek_v3 under sdpa_kernel([CUDNN_ATTENTION, FLASH_ATTENTION, MATH])).
# sdp_utils' checks: flash wants all three equal; memory-efficient
# attention the query's equal to the key's, both the query's and the
# value's aligned; cuDNN both at most 128, or 192 with 128 on sm90/sm10x.
# The recording chose flash by the query's dimension alone and made an
# output of the query's width (the next Linear refused it: "a and b must
# have same reduction dim").  Now: cuDNN for 192/128 (its output of the
# value's width), memory-efficient attention where cuDNN and flash are
# off or do not apply (64/32), math where nothing fused applies (96/64
# with only flash and math enabled).  Skips (77) without PyTorch.
set -u
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
cat >"$tmp/mla.py" <<'PY'
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

def run(dqk, dv, backends):
    q = torch.randn(2, 4, 256, dqk, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, 4, 256, dqk, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(2, 4, 256, dv, device="cuda", dtype=torch.bfloat16)
    with sdpa_kernel(backends, set_priority=True):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert o.shape == (2, 4, 256, dv), o.shape
    print("out", dqk, dv, tuple(o.shape))

run(192, 128, [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
               SDPBackend.MATH])
run(64, 32, [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
             SDPBackend.MATH])
run(96, 64, [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH])
PY
(cd "$tmp" && $MEMSIM record --fake --device h100-80gb -o mla.csv -- "$PY" mla.py) \
	>"$tmp/out" 2>&1 || fail "record: $(tail -3 "$tmp/out")"
grep -q "out 192 128 (2, 4, 256, 128)" "$tmp/out" || fail "192/128: $(cat "$tmp/out")"
grep -q "out 96 64 (2, 4, 256, 64)" "$tmp/out" || fail "96/64: $(cat "$tmp/out")"
# the kernels: cuDNN's RNG seed and offset, its output of the value's
# width (2 x 4 x 256 x 128 bf16) and workspace; then memory-efficient
# attention's output alone (no padded copies: 2 x 4 x 256 x 32 bf16);
# then the math path (its 2 x 4 x 256 x 256 weights among its buffers)
got=$(awk -F, '$3 == "alloc" && ++n <= 11 { printf "%s ", $5 }' "$tmp/mla.csv")
want="786432 786432 524288 8 8 524288 256 262144 262144 131072 131072 "
[ "$got" = "$want" ] || fail "allocations: $got, want $want"
grep -q ",cudnn run_cudnn_SDP_fprop workspace" "$tmp/mla.csv" ||
	fail "no cuDNN attention"
awk -F, '$3 == "alloc" && $2 >= 22 && $5 == 1048576' "$tmp/mla.csv" | grep -q . ||
	fail "no math path for 96/64"
finish recorder_sdpa_vdim
