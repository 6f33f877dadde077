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
(_transform_bias_rescale_qkv, _masked_softmax) are their outputs,
allocated as their CUDA kernels allocate them: values are not computed
(docs/recording.md).

Nested inputs (TransformerEncoder's sparsity fast path) never come here:
the recorder assumes the padding mask is not left-aligned (assumption
nested:padded, dispatch.py), and the layers run on the padded batch.
"""
import torch
import torch.nn.functional as F

from . import fake


def _sdp_fused(rec, major, q, k, v, mask):
    """Whether native_multi_head_attention_cuda takes its fused path:
    select_sdp_backend on the head views picks flash or memory-efficient
    attention, and no mask is given."""
    if mask is not None:
        return False
    try:
        b = fake._sdp_choice(torch, rec, (q, k, v, None), {}, major)
    except RuntimeError:
        return False
    return b in (fake.SDP_FLASH, fake.SDP_EFFICIENT)


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
            del x
            y = F.scaled_dot_product_attention(c[0], c[1], c[2], None,
                                               0.0, False)
            del c
            past = y.transpose(1, 2).reshape(b, -1, e)
            del y
            return F.linear(past, proj_weight, proj_bias), None
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
    # masked_softmax: a mask made boolean; _masked_softmax's output, or
    # the softmax in place without a mask
    if mask is not None:
        m = mask if mask.dtype == torch.bool else mask.to(torch.bool)
        p = torch.empty_like(s)
        del m
        s = p
        del p
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
    del r, ctx, q, k, v, qkv_h
    if need_weights and average_attn_weights:
        s = s.sum(1)
        s.div_(h)
    return proj, s


def _norm(x, e, eps, w, bias):
    return F.layer_norm(x, (e,), w, bias, eps)


def encoder_layer(rec, major, src, embed_dim, num_heads, qkv_weight,
                  qkv_bias, proj_weight, proj_bias, use_gelu, norm_first,
                  eps, norm_w1, norm_b1, norm_w2, norm_b2, ffn_w1, ffn_b1,
                  ffn_w2, ffn_b2, mask=None, mask_type=None):
    """_transformer_encoder_layer_fwd on a CUDA tensor, as ATen's
    transformer_encoder_layer_forward runs it."""
    if src.numel() == 0:
        return src.clone()
    e = int(embed_dim)
    x = src
    if norm_first:
        x = _norm(x, e, eps, norm_w1, norm_b1)
    x = native_mha(rec, major, x, x, x, e, num_heads, qkv_weight, qkv_bias,
                   proj_weight, proj_bias, mask, False, True,
                   mask_type)[0]
    x.add_(src)
    if not norm_first:
        x = _norm(x, e, eps, norm_w1, norm_b1)
    pre = x
    if norm_first:
        x = _norm(x, e, eps, norm_w2, norm_b2)
    # ffn: linear_for_ffn twice, the first with its activation fused
    # (_addmm_activation), on the batch flattened to 2-D
    b, t = x.shape[0], x.shape[1]
    y = torch._addmm_activation(ffn_b1, x.view(b * t, e), ffn_w1.t(),
                                use_gelu=bool(use_gelu))
    y = torch.addmm(ffn_b2, y, ffn_w2.t()).view(b, t, -1)
    del x
    y.add_(pre)
    del pre
    if not norm_first:
        y = _norm(y, e, eps, norm_w2, norm_b2)
    return y
