#!/bin/sh
# memsim record --fake on ops the architectures set of workloads
# (tests/recorder/arch_models.py) showed it missing or misordering, on the H200
# (tests/recorder/op_allocs.py).  Needs Python 3 and PyTorch; skips (77)
# without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
sizes() { awk -F, '$3 == "alloc" { printf "%s%s", s, $5; s = " " } END { print "" }' "$1"; }
for c in groupnorm convt gemm nested mse catconv mathmask accum linear3d lncopy embed embedsmall softmax cumsum h2dconv effbwd boolmask flashpad; do
	$MEMSIM record -o "$tmp/$c.csv" -- "$PY" "$SRC/recorder/op_allocs.py" $c \
		2>"$tmp/err" || fail "record $c: $(tail -3 "$tmp/err")"
done
# 1. GroupNorm(4, 16) on 2 x 16 x 8 x 8, fp32: forward's Y, mean and rstd
# (2*4*4 = 32) and GroupNormKernelImplInternal's a and b (N x C floats:
# 128 each); backward's dX, dgamma, dbeta, then ds and db (128 each), c2
# and c3 (N x G: 32 each) and c1 (128).
got=$(sizes "$tmp/groupnorm.csv")
want="64 64 8192 8192 32 32 128 128 4 4 8192 8192 64 64 128 128 32 32 128"
[ "$got" = "$want" ] || fail "groupnorm: $got"
# 2. ConvTranspose2d(64, 32, 2, stride 2) on 2 x 64 x 16 x 16 under fp16
# autocast: the casts (bias 64, weight 16384, input 65536), the output
# (2*32*32*32*2 = 131072) and cuDNN's workspace, the NCHW rule's
# input + weight + output + 16 (213008) of the convolution it is the
# backward-data of; backward: grad_input and its workspace (that
# convolution's forward), grad_weight and its workspace, the bias
# gradient, and the casts back.
got=$(sizes "$tmp/convt.csv")
want="32768 128 131072 64 16384 65536 131072 213008 262144 4 4 131072 65536 213008 16384 213008 64 131072 32768 128"
[ "$got" = "$want" ] || fail "convt: $got"
# 3. The first Linear: its output (32*128*4), then the cuBLAS workspace of
# the handle (32 MiB on sm90), then cuBLASLt's (1 MiB), as on the H200.
got=$(sizes "$tmp/gemm.csv")
[ "$got" = "32768 512 8192 16384 33554432 1048576" ] || fail "gemm: $got"
# 4. TransformerEncoder in eval with a key padding mask: whether the
# padding is left-aligned depends on the mask's values, known here (all
# False: torch.zeros), so the nested path, every sequence whole: the
# batch packed (2*10*32*4 = 2560), then in each layer the packed
# projection (3 * 2560), the cumulative lengths for the queries and the
# keys (3 int32 each), attention's output and the out-projection (2560
# each), layer_norm (2560, mean and rstd 20 floats each), the FFN (5120,
# 2560) and layer_norm again; no assumption.
grep -q ',assumption,nested:padded' "$tmp/nested.csv" &&
	fail "nested: assumed padded"
got=$(awk -F, '$3 == "alloc" && $8 == "TransformerEncoder.layers.0" {
	printf "%s%s", s, $5; s = " " } END { print "" }' "$tmp/nested.csv")
[ "$got" = "7680 12 12 2560 2560 2560 80 80 5120 2560 2560 80 80" ] ||
	fail "nested: the first layer: $got"
# 5. mse_loss with a reduction: the output, allocated by the structured
# meta function's TensorIterator at the input's size (8*4*128*128*4 =
# 2097152 bytes) and kept when the mean resizes it to a scalar; then
# mse_loss_out's elementwise loss, a temporary of that size, and the
# mean's gpu_reduce_kernel buffers (256 and 4).
got=$(sizes "$tmp/mse.csv")
[ "$got" = "2097152 2097152 2097152 2097152 256 4" ] || fail "mse: $got"
# 6. Conv2d(16, 16, 3) whose output goes into torch.cat: its gradient is a
# channel slice, which cuDNN's backward first copies contiguous (2*16*32*32
# *4 = 131072), before grad_input, and frees after both workspaces
# (271376: input + weight + output + 16).
got=$(sizes "$tmp/catconv.csv" | cut -d' ' -f1-12)
[ "$got" = "9216 131072 131072 271376 262144 4 4 131072 131072 271376 9216 271376" ] ||
	fail "catconv: $got"
grep -q ',cudnn convolution_backward contiguous copy$' "$tmp/catconv.csv" ||
	fail "catconv: no contiguous copy"
# 7. Attention with a mask that requires grad takes the math path
# (_scaled_dot_product_attention_math), which adds the mask to the
# weights in place on the GPU (out of place only for tensor subclasses,
# the fake ones included): q, k, v, the mask, q and k scaled (131072
# each), the weights (2*4*128*128*4 = 524288), the cuBLAS workspace,
# _safe_softmax's output, its rows-all--inf booleans (131072, 1024) and
# 0-dim zero, and the output; no second weights-sized tensor for the add.
got=$(sizes "$tmp/mathmask.csv")
[ "$got" = "131072 131072 131072 262144 131072 131072 524288 33554432 524288 131072 1024 4 131072" ] ||
	fail "mathmask: $got"
# 8. x (64 x 128 floats) feeds two Linear layers: backward's two
# gradients for x (32768 each, one per MmBackward0) are added in place
# (InputBuffer::accumulate: the engine holds the last reference to the
# first), so no third x-sized tensor, as on the GPU (the fake tensors, a
# tensor subclass, would be added out of place).
got=$(sizes "$tmp/accum.csv")
[ "$got" = "65536 65536 32768 32768 33554432 32768 32768 4 4 32768 32768 65536 33554432 32768 65536 32768" ] ||
	fail "accum: $got"
# 9. Linear(64, 96) on a transposed 8 x 16 x 64 input: at::linear copies
# the input contiguous for matmul (32768), makes the output (8*16*96*4 =
# 49152), then adds the bias into it in place (out of place only for
# tensor subclasses): no second output-sized tensor.
got=$(sizes "$tmp/linear3d.csv")
[ "$got" = "24576 384 32768 32768 49152 33554432" ] || fail "linear3d: $got"
# 10. LayerNorm(64) on a transposed 8 x 16 x 64 input: layer_norm_cuda
# copies the input contiguous (32768) before Y, mean and rstd (512
# each); layer_norm_backward_cuda copies it again before dX, dgamma and
# dbeta and the (non-contiguous) grad_out after them.
got=$(sizes "$tmp/lncopy.csv")
[ "$got" = "256 256 32768 32768 32768 512 512 4 4 32768 32768 256 256 32768 32768" ] ||
	fail "lncopy: $got"
# 11. nn.Embedding(10000, 32) on 64 x 64 indices, backward
# (embedding_dense_backward_cuda, more than 3072 indices: the sorting
# path): the sum's gradient made contiguous (524288), sorted_indices,
# orig_indices and the sort's arange (4096*8 each), grad_weight
# (1280000), then embedding_backward_cuda_kernel's segment offsets, count,
# unique_by_key output, two partial-count arrays (min(4096, 10000)*8),
# the partial count, and for 4096/10 + 4096 = 4505 partial segments their
# offsets (36040) and fp32 sums (4505*32*4 = 576640).
got=$(sizes "$tmp/embed.csv")
[ "$got" = "1280000 32768 524288 4 64 4 4 524288 32768 32768 32768 1280000 32768 8 32768 32768 32768 8 36040 576640" ] ||
	fail "embed: $got"
# 11b. nn.Embedding(2, 16) on a 256 x 1 column of 256 x 8 indices, backward
# (embedding_dense_backward_cuda, at most 3072 indices: one kernel): the
# weight (128), the indices (16384), the output (16384), the sum and its
# gradient (4 each); then grad_.contiguous() of the expanded gradient
# (16384) and indices.contiguous() of the column (2048) before grad_weight
# (128), both freed on return (the x-transformers parity program's H200
# snapshot: its sliced tokens' 2048-byte copy in every backward).
got=$(awk -F, '$3 == "alloc" { printf "%s%s", s, $5; s = " " }
	$3 == "free_completed" && $4 == a { printf " free" }
	$3 == "alloc" && $8 == "embedding backward indices copy" { a = $4 }
	END { print "" }' "$tmp/embedsmall.csv")
[ "$got" = "128 16384 16384 4 4 16384 2048 128 free" ] || fail "embedsmall: $got"
# 12. softmax over the last dimension of 2 x 4 x 64 x 96 floats (196608
# bytes), then dropout (its mask: 49152), backward: softmax_backward_cuda_out
# computes grad * output into a temporary (196608) after the structured
# kernel's grad_input and frees it when it returns, before autograd frees
# the dropout's gradient (the gat program's H200 snapshot,
# tests/data/corpus/gat_h200.pickle: one per attention softmax).
got=$(sizes "$tmp/softmax.csv")
[ "$got" = "196608 196608 49152 196608 4 4 196608 196608 196608" ] ||
	fail "softmax: $got"
awk -F, '$8 == "softmax_backward_cuda_out grad * output" { if ($3 == "alloc") { a = $4; n = NR } }
	n && NR == n + 1 { ok = ($3 == "free_completed" && $4 == a) }
	END { exit !ok }' "$tmp/softmax.csv" ||
	fail "softmax: no grad * output temporary freed on return"

# torch.jit.script of a module that calls F.linear,
# F.scaled_dot_product_attention and F.rms_norm (the recorder's
# replacements, which TorchScript tried to compile from their Python
# source: "try blocks aren't supported"): it records, with the eager
# module's allocations.
cat >"$tmp/jit.py" <<'PY'
import sys, torch
import torch.nn.functional as F
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64, 64))
        self.g = torch.nn.Parameter(torch.ones(64))
    def forward(self, x):
        h = F.rms_norm(F.linear(x, self.w), [64], self.g, 1e-6)
        return F.scaled_dot_product_attention(h, h, h)
m = Block().cuda()
if sys.argv[1] == "script":
    m = torch.jit.script(m)
with torch.no_grad():
    m(torch.randn(2, 4, 16, 64, device="cuda"))
PY
for how in eager script; do
	$MEMSIM record -o "$tmp/jit-$how.csv" -- "$PY" "$tmp/jit.py" $how \
		2>"$tmp/err" || fail "jit $how: $(tail -3 "$tmp/err")"
done
[ -n "$(sizes "$tmp/jit-eager.csv")" ] &&
	[ "$(sizes "$tmp/jit-eager.csv")" = "$(sizes "$tmp/jit-script.csv")" ] ||
	fail "jit: $(sizes "$tmp/jit-script.csv"), eager $(sizes "$tmp/jit-eager.csv")"
# 13. cumsum of a [4, 100] bool mask: the int64 result (3200), then
# impl_func_cum_ops' self.to(int64), a copy of the mask (3200) freed on
# return (the H200's tenc_padmask trace); of the int64 result: no copy.
got=$(sizes "$tmp/cumsum.csv")
[ "$got" = "400 3200 3200 3200" ] || fail "cumsum: $got"
# 14. 1000 host float64 to the GPU as float32: non-blocking, the output
# (4000) then copy_kernel_cuda's GPU copy of the host values (8000),
# converted on the GPU; blocking, converted on the host (4000 alone);
# non-blocking without a conversion (8000 alone).
got=$(sizes "$tmp/h2dconv.csv")
[ "$got" = "4000 8000 4000 8000" ] || fail "h2dconv: $got"
# 15. scaled_dot_product_attention of 2 x 4 x 64 x 32 floats with a bool
# mask (memory-efficient path), its output's gradient an expanded scalar
# (sum): _efficient_attention_backward copies grad_out contiguous in its
# B, M, H, K layout (65536) before the three gradients, freed on return
# (the H200's tenc_padmask trace has one such copy a layer and step).
got=$(sizes "$tmp/effbwd.csv")
want="65536 65536 65536 4096 4096 4 4 16384 65536 2048 65536 4 4 65536 65536 65536 65536 65536 2048 2048 131200 65536 65536 65536"
[ "$got" = "$want" ] || fail "effbwd: $got"
# 16. A bool key padding mask of 2 x N expanded to 2 x 4 x N x N, SDPA of
# 2 x 4 x N x 32 floats without grad (memory-efficient attention):
# convert_boolean_attn_mask's at::where(mask, 0.0, scalar_tensor(-inf))
# makes the -inf scalar, where's 0.0 scalar (4 each) and the additive mask
# (2*4*N*N*4: 12800 for N = 20, 18432 for 24); preprocess_mask pads a
# mask whose strides are not multiples of 8 (N = 20: to 24 keys, 15360),
# not one that is (N = 24); then the output (20480, 24576).
got=$(sizes "$tmp/boolmask.csv")
want="20480 40 4 4 12800 15360 20480 24576 48 4 4 18432 24576"
[ "$got" = "$want" ] || fail "boolmask: $got"
# 17. Causal SDPA of 2 x 4 x 64 x 60 bf16 (61440 each) with grad: flash
# attention takes a head dimension of 60 (check_head_dim_size_flash: at
# most 256), scaled_dot_product_attention pads query, key and value to 64
# (pad_last_dim<8, false>: 65536 each), flash makes its padded output
# (65536), logsumexp (2*4*64*4 = 2048) and RNG state, and the output is
# sliced back to 60.  Backward: the slice's zero-padded gradient (65536),
# the three padded gradients and flash's temporaries, then each pad's
# backward narrows its gradient to 60 (61440).  No math path, no fp32.
got=$(sizes "$tmp/flashpad.csv")
want="61440 61440 61440 65536 65536 65536 65536 2048 16 8 2 2 65536 65536 65536 65536 4096 262144 61440 61440 61440"
[ "$got" = "$want" ] || fail "flashpad: $got"
# 18. Under --symbolic the mask's strides are symbolic: preprocess_mask's
# test is made at the recorded size without a guard (one would pin it),
# an assumption; SEQ = 100 pads (7 requests), SEQ = 104 does not (6).
cat >"$tmp/symmask.py" <<'PY'
import os, torch, torch.nn.functional as F
n = int(os.environ["SEQ"])
q = torch.randn(2, 4, n, 32, device="cuda")
mask = torch.ones(2, n, dtype=torch.bool, device="cuda")
with torch.no_grad():
    F.scaled_dot_product_attention(q, q, q, mask[:, None, None, :].expand(-1, 4, n, -1))
PY
for n in 100 104; do
	SEQ=$n $MEMSIM record --symbolic SEQ=$n:512 -o "$tmp/symmask$n.csv" -- \
		"$PY" "$tmp/symmask.py" 2>"$tmp/err" || fail "symmask $n: $(tail -3 "$tmp/err")"
	grep -q "1 assumption (sdpa:mask-alignment 1)" "$tmp/err" ||
		fail "symmask $n: $(tail -1 "$tmp/err")"
done
n100=$(grep -c ',alloc,' "$tmp/symmask100.csv")
n104=$(grep -c ',alloc,' "$tmp/symmask104.csv")
[ "$n100 $n104" = "7 6" ] || fail "symmask: $n100 $n104 requests"

finish recorder_ops.sh
