"""Small GPT-2 and Llama models in plain PyTorch, written op for op as
Hugging Face transformers 5 writes GPT2LMHeadModel and LlamaForCausalLM
(the tensors they allocate and keep are the same), with a DynamicCache
that grows by torch.cat, weight-only int8/fp8 linear layers, and the
causal-LM loss.  The scripts next to this file run them; each names the
`memsim gen model` spec that models it (docs/fidelity.md, "memsim gen").  No
downloaded weights: the models are initialised at random."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Cache:
    """transformers' DynamicCache: DynamicLayer.update stores
    torch.cat([keys, new], dim=-2), from an empty tensor at first."""

    def __init__(self, layers):
        self.keys = [None] * layers
        self.values = [None] * layers

    def update(self, k, v, i):
        if self.keys[i] is None:
            self.keys[i] = torch.tensor([], dtype=k.dtype, device=k.device)
            self.values[i] = torch.tensor([], dtype=v.dtype, device=v.device)
        self.keys[i] = torch.cat([self.keys[i], k], dim=-2)
        self.values[i] = torch.cat([self.values[i], v], dim=-2)
        return self.keys[i], self.values[i]


def causal_lm_loss(logits, labels, vocab, ignore_index=-100):
    """transformers' ForCausalLMLoss."""
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab)
    shift_labels = shift_labels.view(-1)
    return F.cross_entropy(logits, shift_labels, ignore_index=ignore_index,
                           reduction="mean")


class WeightOnlyLinear(nn.Module):
    """A linear layer with int8 (or float8_e4m3fn) weights and one scale an
    output channel; the forward dequantizes the weight to the input's dtype
    for the matmul and scales its output, as torchao's weight-only
    fallback does."""

    def __init__(self, lin, kind):
        super().__init__()
        w = lin.weight.detach()
        top = 127.0 if kind == "int8" else 448.0
        scale = w.abs().amax(dim=1).float().clamp(min=1e-8) / top
        q = w.float() / scale[:, None]
        q = q.round().clamp(-128, 127).to(torch.int8) if kind == "int8" \
            else q.to(torch.float8_e4m3fn)
        self.register_buffer("weight", q)
        self.register_buffer("scale", scale.to(w.dtype))
        self.bias = lin.bias

    def forward(self, x):
        y = torch.mm(x.reshape(-1, x.shape[-1]), self.weight.t().to(x.dtype)) * self.scale
        y = y.reshape(*x.shape[:-1], -1)
        if self.bias is not None:
            y += self.bias
        return y


def quantize(model, kind):
    """Replaces every nn.Linear (lm_head included) by WeightOnlyLinear."""
    for name, child in model.named_children():
        if isinstance(child, nn.Linear):
            setattr(model, name, WeightOnlyLinear(child, kind))
        else:
            quantize(child, kind)
    return model


# ---- GPT-2 ---------------------------------------------------------------

class GPT2Attention(nn.Module):
    def __init__(self, H, N, p):
        super().__init__()
        self.H, self.N, self.p = H, N, p
        self.c_attn = nn.Linear(H, 3 * H)
        self.c_proj = nn.Linear(H, H)
        self.resid_dropout = nn.Dropout(p)

    def forward(self, x, cache=None, i=0):
        B, T, H = x.shape
        q, k, v = self.c_attn(x).split(H, dim=2)
        shape = (B, T, self.N, H // self.N)
        q = q.view(shape).transpose(1, 2)
        k = k.view(shape).transpose(1, 2)
        v = v.view(shape).transpose(1, 2)
        if cache is not None:
            k, v = cache.update(k, v, i)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.p if self.training else 0.0,
            is_causal=q.shape[2] > 1)
        y = y.transpose(1, 2).contiguous()
        y = y.reshape(B, T, H).contiguous()
        y = self.c_proj(y)
        y = self.resid_dropout(y)
        return y


def gelu_new(x):
    """transformers' NewGELUActivation, written out."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                       (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2MLP(nn.Module):
    def __init__(self, H, Fw, p):
        super().__init__()
        self.c_fc = nn.Linear(H, Fw)
        self.c_proj = nn.Linear(Fw, H)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        h = self.c_fc(x)
        h = gelu_new(h)
        h = self.c_proj(h)
        h = self.dropout(h)
        return h


class GPT2Block(nn.Module):
    def __init__(self, H, N, Fw, p):
        super().__init__()
        self.ln_1 = nn.LayerNorm(H)
        self.attn = GPT2Attention(H, N, p)
        self.ln_2 = nn.LayerNorm(H)
        self.mlp = GPT2MLP(H, Fw, p)

    def forward(self, x, cache=None, i=0):
        residual = x
        h = self.ln_1(x)
        attn_output = self.attn(h, cache, i)
        h = attn_output + residual
        residual = h
        h = self.ln_2(h)
        ff = self.mlp(h)
        h = residual + ff
        return h


class GPT2(nn.Module):
    """GPT2LMHeadModel: lm_head tied to wte; checkpoint=True runs each
    block under torch.utils.checkpoint (reentrant, as
    gradient_checkpointing_enable() does), the cache passed positionally
    as GPT2Model passes it."""

    def __init__(self, layers, H, N, V, P, Fw=None, p=0.1, checkpoint=False):
        super().__init__()
        self.V, self.checkpoint = V, checkpoint
        self.wte = nn.Embedding(V, H)
        self.wpe = nn.Embedding(P, H)
        self.drop = nn.Dropout(p)
        self.h = nn.ModuleList(GPT2Block(H, N, Fw or 4 * H, p)
                               for _ in range(layers))
        self.ln_f = nn.LayerNorm(H)

    def body(self, ids, cache, past):
        T = ids.shape[1]
        inputs_embeds = self.wte(ids)
        cache_position = torch.arange(past, past + T, device=ids.device)
        position_ids = cache_position.unsqueeze(0)
        position_embeds = self.wpe(position_ids)
        hidden = inputs_embeds + position_embeds
        hidden = self.drop(hidden)
        for i, block in enumerate(self.h):
            if self.checkpoint and self.training:
                hidden = torch.utils.checkpoint.checkpoint(
                    block, hidden, cache, i, use_reentrant=True)
            else:
                hidden = block(hidden, cache, i)
        hidden = self.ln_f(hidden)
        return hidden

    def forward(self, ids, cache=None, past=0, labels=None, logits_to_keep=0,
                use_cache=True):
        if use_cache and cache is None:
            cache = Cache(len(self.h))
        hidden = self.body(ids, cache, past)
        keep = slice(-logits_to_keep, None) if logits_to_keep else slice(None)
        logits = F.linear(hidden[:, keep, :], self.wte.weight)
        loss = causal_lm_loss(logits, labels, self.V) if labels is not None else None
        return logits, loss, cache


# ---- Llama ---------------------------------------------------------------

class RMSNorm(nn.Module):
    """LlamaRMSNorm."""

    def __init__(self, H, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))
        self.eps = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        return self.weight * hidden_states.to(input_dtype)


class Rotary(nn.Module):
    """LlamaRotaryEmbedding (default rope, attention_scaling 1.0)."""

    def __init__(self, D, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(
            position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * 1.0
        sin = emb.sin() * 1.0
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    B, KV, S, D = x.shape
    x = x[:, :, None, :, :].expand(B, KV, n_rep, S, D)
    return x.reshape(B, KV * n_rep, S, D)


def sdpa_attention(q, k, v, groups):
    """transformers' sdpa_attention_forward, with repeat_kv."""
    k = repeat_kv(k, groups)
    v = repeat_kv(v, groups)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=q.shape[2] > 1)
    y = y.transpose(1, 2).contiguous()
    return y


class LlamaAttention(nn.Module):
    def __init__(self, H, N, KV):
        super().__init__()
        self.D, self.groups = H // N, N // KV
        self.q_proj = nn.Linear(H, H, bias=False)
        self.k_proj = nn.Linear(H, KV * self.D, bias=False)
        self.v_proj = nn.Linear(H, KV * self.D, bias=False)
        self.o_proj = nn.Linear(H, H, bias=False)

    def forward(self, x, cos, sin, cache=None, i=0):
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.D)
        q = self.q_proj(x).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(x).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        if cache is not None:
            k, v = cache.update(k, v, i)
        y = sdpa_attention(q, k, v, self.groups)
        y = y.reshape(*input_shape, -1).contiguous()
        y = self.o_proj(y)
        return y


class LlamaMLP(nn.Module):
    def __init__(self, H, Fw):
        super().__init__()
        self.gate_proj = nn.Linear(H, Fw, bias=False)
        self.up_proj = nn.Linear(H, Fw, bias=False)
        self.down_proj = nn.Linear(Fw, H, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, H, N, KV, Fw):
        super().__init__()
        self.self_attn = LlamaAttention(H, N, KV)
        self.mlp = LlamaMLP(H, Fw)
        self.input_layernorm = RMSNorm(H)
        self.post_attention_layernorm = RMSNorm(H)

    def forward(self, x, cos, sin, cache=None, i=0):
        residual = x
        h = self.input_layernorm(x)
        h = self.self_attn(h, cos, sin, cache, i)
        h = residual + h
        residual = h
        h = self.post_attention_layernorm(h)
        h = self.mlp(h)
        h = residual + h
        return h


class LlamaModel(nn.Module):
    def __init__(self, layers, H, N, KV, Fw):
        super().__init__()
        self.layers = nn.ModuleList(LlamaLayer(H, N, KV, Fw) for _ in range(layers))


class Llama(nn.Module):
    """LlamaForCausalLM: untied lm_head; checkpoint=True runs each layer
    under torch.utils.checkpoint without the cache (LlamaModel passes it
    as a keyword, which GradientCheckpointingLayer drops)."""

    def __init__(self, layers, H, N, KV, V, Fw, checkpoint=False):
        super().__init__()
        self.V, self.checkpoint, self.L = V, checkpoint, layers
        self.embed_tokens = nn.Embedding(V, H)
        self.model = LlamaModel(layers, H, N, KV, Fw)
        self.norm = RMSNorm(H)
        self.rotary_emb = Rotary(H // N)
        self.lm_head = nn.Linear(H, V, bias=False)

    def body(self, ids, cache, past):
        T = ids.shape[1]
        inputs_embeds = self.embed_tokens(ids)
        cache_position = torch.arange(past, past + T, device=ids.device)
        position_ids = cache_position.unsqueeze(0)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for i, layer in enumerate(self.model.layers):
            if self.checkpoint and self.training:
                hidden_states = torch.utils.checkpoint.checkpoint(
                    layer, hidden_states, *position_embeddings, None, i,
                    use_reentrant=True)
            else:
                hidden_states = layer(hidden_states, *position_embeddings, cache, i)
        hidden_states = self.norm(hidden_states)
        return hidden_states

    def forward(self, ids, cache=None, past=0, labels=None, logits_to_keep=0,
                use_cache=True):
        if use_cache and cache is None:
            cache = Cache(self.L)
        hidden_states = self.body(ids, cache, past)
        keep = slice(-logits_to_keep, None) if logits_to_keep else slice(None)
        logits = self.lm_head(hidden_states[:, keep, :])
        loss = causal_lm_loss(logits, labels, self.V) if labels is not None else None
        return logits, loss, cache


@torch.no_grad()
def generate(model, ids, n):
    """generate() with greedy decoding: the prefill computes the last
    position's logits only (logits_to_keep=1), then n decode steps."""
    cache = Cache(model.L if isinstance(model, Llama) else len(model.h))
    logits = model(ids, cache=cache, logits_to_keep=1)[0]
    tok = logits[:, -1].argmax(-1, keepdim=True)
    del logits
    for i in range(n):
        logits = model(tok, cache=cache, past=ids.shape[1] + i, logits_to_keep=1)[0]
        tok = logits[:, -1].argmax(-1, keepdim=True)
        del logits
    del cache, tok


def train(model, batches, steps, accum=1, lr=1e-4):
    """AdamW (foreach, CUDA's default); accum micro-batches a step."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, foreach=True)
    model.train()
    k = 0
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        for j in range(accum):
            x = batches(k)
            k += 1
            loss = model(x, labels=x)[1]
            loss.backward()
            del x, loss
        opt.step()
