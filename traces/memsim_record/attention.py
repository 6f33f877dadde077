"""--fake: the fused inference paths of nn.TransformerEncoderLayer and
nn.MultiheadAttention, run as the ops their CUDA kernels compose.

Under eval() and no grad, TransformerEncoderLayer.forward calls
torch._transformer_encoder_layer_fwd and MultiheadAttention.forward
torch._native_multi_head_attention.  On the GPU each is a C++ function
that calls other ATen ops (ATen's transformer_encoder_layer_forward and
native_multi_head_attention_cuda): every tensor those ops make is an
allocation of the caching allocator, freed when the C++ function lets it
go.  The fake mode sees one op and its outputs (PyTorch 2.11 has no fake
kernel for either: a GPU-less machine would need the CUDA one).  Here
the same ops run, on fake tensors, under the recorder's dispatch mode
(dispatch.py), so each temporary is recorded where the GPU makes it and
freed where the GPU frees it.  Ops without a fake kernel of their own
(_transform_bias_rescale_qkv, _masked_softmax's persistent kernel) are
their outputs, allocated as their CUDA kernels allocate them; the fused
op's values are its CPU kernel's (dispatch.py, values.py).

nn.TransformerEncoder's sparsity fast path (eval, no grad, a key padding
mask whose padding is all at the end) packs the batch into a nested
tensor (_nested_tensor_from_mask), runs the layers on it and pads the
result back (to_padded_tensor).  Nested tensors have no fake kernels:
the recorder stands one in by its buffer (Nested), a [tokens, features]
tensor allocated as the CUDA kernels allocate it, and runs each layer on
that buffer as the nested kernels do (nested_linear, the memory-efficient
or flash kernel over cumulative sequence lengths, NestedTensor_layer_norm,
NestedTensor_times_Tensor_plus_Tensor_addmm): every temporary scales with
the tokens kept, not the padded length.  The lengths come from the mask's
values where they are known (a mask of deterministic origin or made from
host data: values.py's shadows); otherwise the mask is assumed not
left-aligned (assumption nested:padded) and the layers run on the padded
batch with the mask.
"""
import weakref

import torch
import torch.nn.functional as F

from . import fake
from . import values


def _sdp_fused(rec, major, q, k, v, mask):
    """Whether native_multi_head_attention_cuda takes its fused path:
    select_sdp_backend on the head views picks flash, memory-efficient or
    cuDNN attention, and no mask is given."""
    if mask is not None:
        return False
    try:
        b = fake._sdp_choice(torch, rec, (q, k, v, None), {}, major)
    except RuntimeError:
        return False
    return b in (fake.SDP_FLASH, fake.SDP_EFFICIENT, fake.SDP_CUDNN)


def _masked_softmax(s, m, mask_type):
    """masked_softmax_cuda on the scores S [B, heads, T, T] with the
    boolean mask M: its output; the persistent kernel takes the mask as
    it is where a row fits it (at most 1024 elements and 4096 bytes) and
    the mask is contiguous (a [B, T] key padding mask, a full one); else
    (a [T, T] mask, expanded) the output it made first is replaced by
    softmax(masked_fill(S, M, -inf)), the masked copy freed after."""
    t = s.shape[-1]
    txt = mask_type == 0 and m.dim() == 2 and s.dim() == 4 and \
        tuple(m.shape) == (t, t)
    out = torch.empty_like(s)
    if t <= 1024 and t * s.element_size() <= 4096 and not txt:
        return out
    if mask_type == 1 and m.dim() == 2:
        m = m.view(m.shape[0], 1, 1, m.shape[1])
    filled = s.masked_fill(m.expand(s.shape), float("-inf"))
    out = torch.softmax(filled, -1)
    del filled
    return out


def native_mha(rec, major, query, key, value, embed_dim, num_head,
               qkv_weight, qkv_bias, proj_weight, proj_bias, mask=None,
               need_weights=True, average_attn_weights=True,
               mask_type=None):
    """_native_multi_head_attention on CUDA tensors, as
    native_multi_head_attention_cuda runs it: (output, weights or
    None)."""
    e, h = int(embed_dim), int(num_head)
    dh = e // h
    b = query.shape[0]
    if query is key and key is value and dh % 8 == 0 and \
            not need_weights:
        # select_sdp_backend asked on views of the input, heads split
        heads = query.view(b, -1, h, dh).transpose(1, 2)
        if _sdp_fused(rec, major, heads, heads, heads, mask):
            # at::linear, chunk, scaled_dot_product_attention (the
            # recorder's: the backend the device would run), the
            # out-projection
            x = F.linear(query, qkv_weight, qkv_bias)
            c = [t.view(b, -1, h, dh).transpose(1, 2)
                 for t in x.chunk(3, -1)]
            y = F.scaled_dot_product_attention(c[0], c[1], c[2], None,
                                               0.0, False)
            past = y.transpose(1, 2).reshape(b, -1, e)
            out = F.linear(past, proj_weight, proj_bias)
            # x, its chunks, y and past live until the function returns
            del past, y, c, x
            return out, None
    # qkv_projection: one GEMM for self-attention, else the parts and cat
    if query is key and key is value:
        qkv = torch.matmul(query, qkv_weight.t())
    elif key is value:
        wq, wkv = qkv_weight.split([e, 2 * e], 0)
        qkv = torch.cat([torch.matmul(query, wq.t()),
                         torch.matmul(key, wkv.t())], 2)
    else:
        ws = qkv_weight.chunk(3, 0)
        qkv = torch.cat([torch.matmul(t, w.t())
                         for t, w in zip((query, key, value), ws)], 2)
    if qkv.numel() == 0:
        return torch.empty_like(query), None
    t = qkv.shape[1]
    # _transform_bias_rescale_qkv: q, k and v (bias added, q scaled) in
    # one [3, B, heads, T, head_dim] tensor; the projection is freed
    qkv_h = torch.empty((3, b, h, t, dh), dtype=qkv_bias.dtype,
                        device=qkv_bias.device)
    del qkv
    q, k, v = qkv_h.view(3 * b, h, t, dh).split(b, 0)
    # bmm_nt: the scores [B, heads, T, T]
    s = torch.bmm(q.reshape(b * h, t, dh),
                  k.reshape(b * h, t, dh).transpose(2, 1)).view(b, h, t, t)
    # masked_softmax: a mask made boolean, then _masked_softmax; or the
    # softmax in place without a mask
    if mask is not None:
        # masked_softmax(qkt, mask, ...) takes the mask by value: its
        # boolean copy is a temporary of the caller's assignment, freed
        # after the scores it replaces (the H200's order)
        m = mask if mask.dtype == torch.bool else mask.to(torch.bool)
        p = _masked_softmax(s, m, mask_type)
        s = p
        del p, m
    else:
        torch.ops.aten._softmax.out(s, -1, False, out=s)
    # bmm_nn: the context written over q (q's storage reused)
    ctx = torch.bmm(s.view(b * h, t, t), v.reshape(b * h, t, dh),
                    out=q.reshape(b * h, t, dh)).view(b, h, t, dh)
    if not need_weights:
        s = None
    # transform0213_gemm_nt_bias: heads back beside each other (a copy),
    # then at::native::linear with the bias
    a = ctx.permute(0, 2, 1, 3).contiguous()
    r = F.linear(a.view(b * t, e), proj_weight, proj_bias)
    del a
    proj = r.view(b, t, e)
    del r, ctx
    if need_weights and average_attn_weights:
        # qkt = qkt.sum(1): the scores go at the assignment, the heads
        # ([3, B, heads, T, d]) when the function returns, after it
        s = s.sum(1)
        s.div_(h)
    del q, k, v, qkv_h
    return proj, s


class Nested:
    """The nested tensors of one recording, each stood in by a fake
    tensor of the padded shape that views its buffer (strides 0, 0, 1:
    nothing beyond the buffer is allocated), with the sequences' lengths
    and the buffer as [tokens, features]."""

    def __init__(self):
        self.by_id = {}

    def make(self, buf2d, lengths, padded_len):
        n, d = len(lengths), buf2d.shape[1]
        st = buf2d.view(-1).as_strided((n, padded_len, d), (0, 0, 1))
        key = id(st)
        self.by_id[key] = (buf2d, list(lengths), padded_len)
        weakref.finalize(st, self.by_id.pop, key, None)
        return st

    def get(self, t):
        return self.by_id.get(id(t))


def _lengths(t, mask):
    """The composite both mask functions start with (ATen's
    NestedTensor_nested_tensor_from_mask and _left_aligned): the first
    padding position of each row (argmin over the mask with a False
    column appended, as int32) and the count of kept positions (the
    cumulative sum's last column); the appended column is returned too,
    a local of theirs that lives until they return."""
    n, l = mask.shape
    pad = torch.zeros((n, 1), dtype=mask.dtype, device=mask.device)
    # at::cat(...).to(kInt).argmin(1): the cat and its int32 copy are
    # temporaries of one C++ expression, freed after argmin's result,
    # the last made first
    cat = torch.cat([mask, pad], 1)
    as_int = cat.to(torch.int32)
    nums = as_int.argmin(1)
    del as_int, cat
    sizes = mask.cumsum(1).select(1, l - 1)
    return sizes, nums.to(sizes.dtype), pad


def left_aligned(t, mask):
    """_nested_tensor_from_mask_left_aligned: whether every row of MASK
    (True where kept) keeps a prefix; its locals go as it returns, the
    last declared first (nums, tmp_pad, sizes)."""
    sizes, nums, pad = _lengths(t, mask)
    r = torch.equal(sizes, nums)
    del nums, pad, sizes
    return r


def from_mask(rec, nested, t, mask, mask_check=True):
    """_nested_tensor_from_mask(T, MASK): the lengths to the host, then
    nested_from_padded_cuda: the buffer and its int32 metadata on the
    GPU (freed on return); the function's locals after.  The stand-in."""
    n, l, d = t.shape
    sizes, nums, pad = _lengths(t, mask)
    if mask_check and not torch.equal(sizes, nums):
        raise RuntimeError("Mask must be left-aligned without gaps")
    sizes = sizes.reshape(n, 1)
    dd = torch.full_like(sizes, d)
    sizes = torch.cat([sizes, dd], 1).to("cpu")
    if type(sizes) is torch.Tensor:
        lengths = [int(v) for v in sizes[:, 0].tolist()]
    else:
        # values unknown (a mask_check=False encoder; with the check
        # the padded path is taken first): every sequence whole
        values.assume(rec, "nested:whole", l)
        lengths = [l] * n
    buf = torch.empty((sum(lengths), d), dtype=t.dtype, device=t.device)
    # sizes, the padded shape and the offsets (int64 on the host) to the
    # GPU as int32, non-blocking
    meta = torch.zeros((2 * n + 3 + n + 1,), dtype=torch.int64)
    meta = meta.to(t.device, torch.int32, non_blocking=True)
    del meta
    st = nested.make(buf, lengths, l)
    del dd, nums, pad
    return st


def to_padded(nested, t, padding, output_size=None):
    """to_padded_tensor of a stand-in (NestedTensor_to_padded_tensor_cuda
    with an output size): the padded output, then the offsets and sizes
    as int32 on the GPU for the kernel, freed on return."""
    buf, lengths, padded_len = nested.get(t)
    n, d = len(lengths), buf.shape[1]
    size = tuple(output_size) if output_size is not None else \
        (n, max(lengths), d)
    out = torch.empty(size, dtype=buf.dtype, device=buf.device)
    meta = torch.empty((n + 1 + 2 * n,), dtype=torch.int32,
                       device=buf.device)
    del meta
    return out


def _nested_sdpa(major, dtype, dh):
    """The kernel scaled_dot_product_attention takes for nested inputs
    without a mask: flash or memory-efficient attention (cuDNN's takes
    no nested tensors), or None for the math path (which native
    multi-head attention does not hand to SDPA)."""
    half = dtype in (torch.float16, torch.bfloat16)
    flags = fake._sdp_flags(torch)()
    enabled = dict(zip((fake.SDP_CUDNN, fake.SDP_FLASH, fake.SDP_EFFICIENT,
                        fake.SDP_MATH), flags))
    if enabled[fake.SDP_FLASH] and major >= 8 and half and dh <= 256 and \
            dh % 8 == 0:
        return fake.SDP_FLASH
    if enabled[fake.SDP_EFFICIENT] and major >= 5 and \
            dh % fake._gemm_alignment(torch, dtype, major) == 0:
        return fake.SDP_EFFICIENT
    return None


def _norm(x, e, eps, w, bias):
    return F.layer_norm(x, (e,), w, bias, eps)


def _nested_mha(major, x, lengths, e, h, qkv_weight, qkv_bias,
                proj_weight, proj_bias):
    """native_multi_head_attention_cuda on a nested input (its buffer X,
    [tokens, E]): through SDPA where its fused path applies (head
    dimension a multiple of 8, every sequence longer than one, flash or
    memory-efficient attention: _nested_sdpa), else its own path
    (_nested_own)."""
    dh = e // h
    kind = _nested_sdpa(major, x.dtype, dh)
    if kind is None or dh % 8 or min(lengths) <= 1:
        return _nested_own(x, lengths, e, h, qkv_weight, qkv_bias,
                           proj_weight, proj_bias)
    # nested_linear (the buffer's GEMM), the nested kernel over
    # cumulative sequence lengths (sdpa_nested_preprocessing: q, k and v
    # the projection's chunks, viewed in place; the lengths as int32 on
    # the GPU, one tensor for the queries, one for the keys), its output
    # [tokens, heads, head_dim] (flash adds its fp32 log-sum-exp), then
    # the out-projection; the projection and the attention output live
    # until the function returns.
    ntok, n = x.shape[0], len(lengths)
    qkv = F.linear(x, qkv_weight, qkv_bias)
    cu_q = torch.empty((n + 1,), dtype=torch.int32, device=x.device)
    cu_k = torch.empty((n + 1,), dtype=torch.int32, device=x.device)
    y = torch.empty((ntok, h, dh), dtype=x.dtype, device=x.device)
    lse = rng = unused = None
    if kind == fake.SDP_FLASH:
        # mha_varlen_fwd: the log-sum-exp, then the RNG state (two
        # uint64) and an unused uint64 scalar, both on the GPU
        lse = torch.empty((h, ntok), dtype=torch.float32, device=x.device)
        rng = torch.empty((2,), dtype=torch.int64, device=x.device)
        unused = torch.empty((), dtype=torch.int64, device=x.device)
    # the nested kernel's tuple (output, logsumexp, cum_seq_q, cum_seq_k,
    # ..., philox seed, philox offset) goes element by element, first to
    # last, when scaled_dot_product_attention returns its output
    del lse, cu_q, cu_k, rng, unused
    out = F.linear(y.view(ntok, e), proj_weight, proj_bias)
    del y, qkv
    return out


def _nested_own(x, lengths, e, h, qkv_weight, qkv_bias, proj_weight,
                proj_bias):
    """native multi-head attention's own path on a nested input:
    NestedTensor_matmul (the projection without bias, [tokens, 3E]);
    transform_bias_rescale_qkv_cuda pads it into [3, B, heads, T,
    head_dim], T the longest sequence rounded up to 8, with its offsets
    and sizes as int32 on the GPU; the scores; _nested_tensor_softmax_
    with_shape (the padding as a [B, T] boolean mask sent to the GPU,
    _masked_softmax's output); the context over q; then
    transform0213_gemm_nt_bias packs the heads back (_nested_from_padded
    with its 0213 transform: a [tokens, E] buffer and its metadata, sent
    as nested_from_padded sends it) for the out-projection's addmm."""
    n, dev = len(lengths), x.device
    dh = e // h
    t = max(lengths)
    t += (8 - t % 8) % 8
    qkv = torch.mm(x, qkv_weight.t())
    qkv_h = torch.empty((3, n, h, t, dh), dtype=qkv_bias.dtype, device=dev)
    meta = torch.empty((2 * n + 1,), dtype=torch.int32, device=dev)
    del meta, qkv
    q, k, v = qkv_h.view(3 * n, h, t, dh).split(n, 0)
    s = torch.bmm(q.reshape(n * h, t, dh),
                  k.reshape(n * h, t, dh).transpose(2, 1)).view(n, h, t, t)
    m = torch.zeros((n, t), dtype=torch.bool).to(dev, non_blocking=True)
    p = torch.empty_like(s)
    del m
    s = p
    del p
    torch.bmm(s.view(n * h, t, t), v.reshape(n * h, t, dh),
              out=q.reshape(n * h, t, dh))
    del s
    a = torch.empty((sum(lengths), e), dtype=x.dtype, device=dev)
    meta = torch.zeros((2 * n + 4 + n + 1,), dtype=torch.int64)
    meta = meta.to(dev, torch.int32, non_blocking=True)
    del meta
    out = torch.addmm(proj_bias, a, proj_weight.t())
    del a, q, k, v, qkv_h
    return out


def _layer(src, attend, e, use_gelu, norm_first, eps, norm_w1, norm_b1,
           norm_w2, norm_b2, ffn_w1, ffn_b1, ffn_w2, ffn_b2):
    """transformer_encoder_layer_forward past its checks, on a CUDA
    tensor or a nested stand-in's buffer ([tokens, E]): attend(x) (native
    multi-head attention, or its nested form), the residual add in place,
    layer_norm; the FFN, linear_for_ffn twice, the first with its
    activation fused (_addmm_activation), on the tokens flattened to
    2-D; add, layer_norm (norm_first: the norms before)."""
    x = src
    if norm_first:
        x = _norm(x, e, eps, norm_w1, norm_b1)
    x = attend(x)
    x.add_(src)
    if not norm_first:
        x = _norm(x, e, eps, norm_w1, norm_b1)
    pre = x
    if norm_first:
        x = _norm(x, e, eps, norm_w2, norm_b2)
    y = torch._addmm_activation(ffn_b1, x.view(-1, e), ffn_w1.t(),
                                use_gelu=bool(use_gelu))
    y = torch.addmm(ffn_b2, y, ffn_w2.t())
    if x.dim() != 2:
        y = y.view(*x.shape[:-1], -1)
    del x
    y.add_(pre)
    # pre_ffn_res, a local of transformer_encoder_layer_forward, is
    # released when it returns: after the second norm's output
    if not norm_first:
        y = _norm(y, e, eps, norm_w2, norm_b2)
    return y


def encoder_layer(rec, major, nested, src, embed_dim, num_heads,
                  qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
                  norm_first, eps, norm_w1, norm_b1, norm_w2, norm_b2,
                  ffn_w1, ffn_b1, ffn_w2, ffn_b2, mask=None, mask_type=None):
    """_transformer_encoder_layer_fwd on a CUDA tensor or a nested
    stand-in, as ATen's transformer_encoder_layer_forward runs it."""
    e = int(embed_dim)
    rest = (e, use_gelu, norm_first, eps, norm_w1, norm_b1, norm_w2,
            norm_b2, ffn_w1, ffn_b1, ffn_w2, ffn_b2)
    packed = nested.get(src)
    if packed is not None:
        buf, lengths, padded_len = packed
        y = _layer(buf, lambda x: _nested_mha(
            major, x, lengths, e, int(num_heads), qkv_weight, qkv_bias,
            proj_weight, proj_bias), *rest)
        return nested.make(y, lengths, padded_len)
    if src.numel() == 0:
        return src.clone()
    return _layer(src, lambda x: native_mha(
        rec, major, x, x, x, e, num_heads, qkv_weight, qkv_bias,
        proj_weight, proj_bias, mask, False, True, mask_type)[0], *rest)
