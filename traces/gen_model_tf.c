/*
 * Transformers in the model generator: parameters, forward and backward
 * by layer (each a tensor script), checkpointed recomputation, KV caches
 * and inference (gen_model_int.h).
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/gen_model_int.h"

/* ---- transformers ------------------------------------------------------ */

void
mg_exit_all(mg_t *m)
{
	mg_tf_t *t = m->tf;
	for (uint64_t i = 0; t && i < t->L; i++) {
		mg_cast_exit(m, &t->fwd[i]);
		/* a checkpointed layer's weight casts: nobody saved them */
		bool ck = false;
		for (uint64_t s = 0; m->seg && s <= i; s++)
			if (m->seg[s] && s + m->seg[s] > i)
				ck = true;
		mg_scope_t *sc = &t->fwd[i];
		for (int q = 0; ck && q < sc->n; q++)
			if (mg_listed(m->ts->wcasts, sc->names[q])) {
				int64_t id = sc->ids[q];
				mg_free(m, &id);
				sc->ids[q] = -1;
			}
	}
}

static mg_ctx_t
mg_fwd_ctx(mg_t *m, mg_tf_t *t, uint64_t i)
{
	mg_ctx_t x = {0};
	x.cur = &t->fwd[i];
	x.prev = i ? &t->fwd[i - 1] : &t->pre;
	x.prev2 = i >= 2 ? &t->fwd[i - 2] : (i == 1 ? &t->pre : NULL);
	x.pre = &t->pre;
	x.tail = &t->tail;
	x.kv = &t->kv[i];
	x.gbase = m->ts->pre_params + (unsigned)i * m->ts->layer_params;
	return x;
}

static void
mg_layer_fwd(mg_t *m, mg_tf_t *t, uint64_t i, bool recompute)
{
	mg_ctx_t x = mg_fwd_ctx(m, t, i);
	mg_scope_reset(x.cur);
	x.cur->recompute = recompute;
	x.local_frees = recompute;
	mg_run(m, m->ts->layer, &x);
}

static void
mg_layer_bwd(mg_t *m, mg_tf_t *t, uint64_t i)
{
	mg_ctx_t x = {0};
	x.cur = &t->bwd[i];
	mg_scope_reset(x.cur);
	x.prev = i + 1 < t->L ? &t->bwd[i + 1] : &t->tail;
	x.own = &t->fwd[i];
	x.next = i + 1 < t->L ? &t->fwd[i + 1] : &t->tail;
	x.prevf = i ? &t->fwd[i - 1] : &t->pre;
	x.pre = &t->pre;
	x.tail = &t->tail;
	x.gbase = m->ts->pre_params + (unsigned)i * m->ts->layer_params;
	mg_run(m, m->ts->layer_bwd, &x);
}

/* Hands the cache copies of k and v of layer i (the names kvcopies) over
 * to the layer's cache: the DynamicCache outlives the layer's saved
 * tensors when a checkpoint's context holds it. */
static void
mg_kv_keep(mg_t *m, mg_tf_t *t, uint64_t i)
{
	mg_scope_t *sc = &t->fwd[i];
	for (int k = 0; k < sc->n; k++)
		if (sc->ids[k] >= 0 && mg_listed(m->ts->kvcopies,
						 sc->names[k])) {
			mg_bind(m, &t->kv[i], sc->names[k],
				strlen(sc->names[k]), sc->ids[k]);
			sc->ids[k] = -1;
		}
}

/* Whether the cache outlives the forward: GPT-2's, once a layer is
 * checkpointed (every checkpoint's context holds it to its backward). */
static bool
mg_cache_held(mg_t *m, const uint32_t *seg)
{
	if (!seg || !m->ts->ckpt_cache || !m->kv_on)
		return false;
	for (uint64_t i = 0; i < m->cfg->layers; i++)
		if (seg[i])
			return true;
	return false;
}

static void
mg_tf_forward(mg_t *m, mg_tf_t *t, const uint32_t *seg)
{
	mg_ctx_t x = {.cur = &t->pre, .pre = &t->pre, .tail = &t->tail};
	bool kv = m->kv_on, held = mg_cache_held(m, seg);
	mg_scope_reset(&t->pre);
	mg_run(m, m->ts->pre, &x);
	for (uint64_t i = 0; i < t->L && !m->err;) {
		uint64_t k = seg ? seg[i] : 0;
		if (!k) {
			mg_layer_fwd(m, t, i, false);
			if (held)
				mg_kv_keep(m, t, i);
			i++;
			continue;
		}
		/* A checkpointed segment (torch.utils.checkpoint, reentrant
		 * as Hugging Face asks for it): run under no_grad, so only its
		 * output is left, and the input its context saves.  Also left:
		 * autocast's cached weight casts (cached_cast caches the casts
		 * of leaf parameters under no_grad too; freed when autocast
		 * exits) and, for GPT-2, the copies of k and v its
		 * DynamicCache keeps.  Llama's layers get no cache
		 * (GradientCheckpointingLayer drops past_key_values). */
		if (!m->ts->ckpt_cache)
			m->kv_on = false;
		for (uint64_t j = i; j < i + k; j++) {
			mg_layer_fwd(m, t, j, false);
			if (held)
				mg_kv_keep(m, t, j);
		}
		m->kv_on = kv;
		for (uint64_t j = i; j < i + k; j++) {
			mg_scope_t *sc = &t->fwd[j];
			for (int q = 0; q < sc->n; q++) {
				if ((j + 1 == i + k &&
				     !strcmp(sc->names[q], m->ts->out)) ||
				    mg_listed(m->ts->wcasts, sc->names[q]))
					continue;
				int64_t id = sc->ids[q];
				mg_free(m, &id);
				sc->ids[q] = -1;
			}
		}
		i += k;
	}
}

/* Recomputes the segment first..last (the backward of its checkpoint):
 * the forward again with grad, its activations freed by the segment's
 * backward as usual.  The segment's original output went when the next
 * segment's backward released its context; the recomputed one is held by
 * the checkpoint's backward until it returns (*out_held).  A GPT-2 cache
 * still held gets each layer's k and v concatenated again (twice the
 * length, kept by the cache). */
static void
mg_recompute(mg_t *m, mg_tf_t *t, uint64_t first, uint64_t last,
	     bool held, int64_t *out_held)
{
	mg_scope_t *lastsc = &t->fwd[last];
	mg_free_name(m, lastsc, m->ts->out, strlen(m->ts->out));
	bool kv = m->kv_on;
	if (!m->ts->ckpt_cache)
		m->kv_on = false;
	for (uint64_t j = first; j <= last; j++) {
		mg_layer_fwd(m, t, j, true);
		m->g->recompute++;
		mg_scope_t *sc = &t->fwd[j];
		for (int q = 0; held && q < sc->n; q++) {
			if (sc->ids[q] < 0 ||
			    !mg_listed(m->ts->kvcopies, sc->names[q]))
				continue;
			/* torch.cat([cache, k]): 2x the length */
			uint64_t sz = m->g->sizes[sc->ids[q]];
			int64_t cat = mg_alloc(m, 2 * sz);
			int64_t id = sc->ids[q];
			mg_free(m, &id);
			sc->ids[q] = -1;
			mg_free_name(m, &t->kv[j], sc->names[q],
				     strlen(sc->names[q]));
			mg_bind(m, &t->kv[j], sc->names[q],
				strlen(sc->names[q]), cat);
		}
	}
	m->kv_on = kv;
	int32_t *o = mg_lookup(lastsc, m->ts->out, strlen(m->ts->out));
	if (o) {
		*out_held = *o;
		*o = -1;
	}
	for (uint64_t j = first; j <= last; j++)
		mg_cast_exit(m, &t->fwd[j]);
}

static void
mg_tf_backward(mg_t *m, mg_tf_t *t, const uint32_t *seg)
{
	bool held = mg_cache_held(m, seg);
	int64_t out_held = -1;
	for (uint64_t i = t->L; i-- > 0 && !m->err;) {
		uint64_t first = i;
		if (seg) { /* the segment ending at layer i, if any */
			for (uint64_t s = 0; s <= i; s++)
				if (seg[s] && s + seg[s] - 1 == i) {
					mg_recompute(m, t, s, i, held,
						     &out_held);
					break;
				}
			for (uint64_t s = 0; s <= i; s++)
				if (seg[s] && s + seg[s] > i)
					first = s;
		}
		mg_layer_bwd(m, t, i);
		if (seg && i == first)
			mg_free(m, &out_held); /* the checkpoint returns */
	}
	/* the last checkpoint's node goes, and the cache with it */
	if (held)
		mg_tf_kv_free(m, t);
	mg_ctx_t x = {.cur = &t->prebwd, .prev = &t->bwd[0], .own = &t->pre,
		      .next = &t->fwd[0], .pre = &t->pre, .tail = &t->tail};
	mg_scope_reset(&t->prebwd);
	mg_run(m, m->ts->pre_bwd, &x);
}

static void
mg_tf_tail(mg_t *m, mg_tf_t *t)
{
	mg_ctx_t x = {.cur = &t->tail, .pre = &t->pre, .tail = &t->tail};
	x.prev = &t->fwd[t->L - 1];
	x.prev2 = t->L >= 2 ? &t->fwd[t->L - 2] : &t->pre;
	x.prevf = x.prev;
	x.gbase = m->ts->pre_params + (unsigned)t->L * m->ts->layer_params;
	mg_scope_reset(&t->tail);
	mg_run(m, m->ts->tail, &x);
}

static void
mg_tf_free_all(mg_t *m, mg_tf_t *t)
{
	mg_scope_drop(m, &t->pre, NULL);
	for (uint64_t i = 0; i < t->L; i++) {
		mg_scope_drop(m, &t->fwd[i], NULL);
		mg_scope_drop(m, &t->bwd[i], NULL);
	}
	mg_scope_drop(m, &t->tail, NULL);
	mg_scope_drop(m, &t->prebwd, NULL);
}

/* A linear layer's weight (in x out elements), and its per-channel scales
 * when quantized. */
static void
mg_linear(mg_t *m, uint64_t in, uint64_t out)
{
	if (!m->quant) {
		mg_param(m, in * out);
		return;
	}
	if (m->np + 1 < m->maxparam) {
		m->psize[m->np++] = in * out; /* 1 byte an element */
		m->psize[m->np++] = out * m->a;
	}
}

/* The parameters of a transformer, in module order (the order
 * model.to(device) allocates them).  Returns the index of the first
 * parameter after which the buffers come (Llama's rotary inv_freq sits
 * between the final norm and lm_head), or np. */
static unsigned
mg_tf_params(mg_t *m, uint64_t L)
{
	const msim_model_cfg_t *c = m->cfg;
	uint64_t H = m->H, F = m->F, Q = m->Q, KD = m->KV * m->D;
	if (c->arch == MSIM_ARCH_LLAMA) {
		/* embed_tokens; a LlamaDecoderLayer: q, k, v, o projections
		 * (no biases), gate, up, down (SwiGLU), two RMSNorm weights;
		 * the final norm, then an untied lm_head */
		mg_param(m, m->V * H);
		for (uint64_t i = 0; i < L; i++) {
			mg_linear(m, H, H);
			mg_linear(m, H, KD);
			mg_linear(m, H, KD);
			mg_linear(m, H, H);
			mg_linear(m, H, F);
			mg_linear(m, H, F);
			mg_linear(m, F, H);
			mg_param(m, H);
			mg_param(m, H);
		}
		mg_param(m, H);
		unsigned bufs = m->np;
		mg_linear(m, H, m->V);
		return bufs;
	}
	bool bert = c->arch == MSIM_ARCH_BERT;
	mg_param(m, m->V * H);
	mg_param(m, m->P * H);
	if (bert) {
		mg_param(m, 2 * H);
		mg_param(m, H);
		mg_param(m, H);
	}
	for (uint64_t i = 0; i < L; i++) {
		if (bert) {
			uint64_t e[16] = {H * H, H, H * H, H, H * H, H, H * H,
					  H, H, H, H * F, F, F * H, H, H, H};
			for (int k = 0; k < 16; k++)
				mg_param(m, e[k]);
			continue;
		}
		/* ln_1, c_attn, c_proj, ln_2, c_fc, c_proj (Conv1D: weight
		 * and bias) */
		mg_param(m, H);
		mg_param(m, H);
		mg_linear(m, H, Q);
		mg_param(m, Q);
		mg_linear(m, H, H);
		mg_param(m, H);
		mg_param(m, H);
		mg_param(m, H);
		mg_linear(m, H, F);
		mg_param(m, F);
		mg_linear(m, F, H);
		mg_param(m, H);
	}
	if (bert) {
		mg_param(m, H * H);
		mg_param(m, H);
	} else {
		mg_param(m, H); /* ln_f; lm_head is tied to wte */
		mg_param(m, H);
	}
	return m->np;
}

/* The KV cache goes (del cache, or the model's output object dies). */
void
mg_tf_kv_free(mg_t *m, mg_tf_t *t)
{
	for (uint64_t i = 0; i < t->L; i++) {
		for (int k = 0; k < t->kv[i].n; k++) {
			int64_t id = t->kv[i].ids[k];
			mg_free(m, &id);
			t->kv[i].ids[k] = -1;
		}
		mg_scope_reset(&t->kv[i]);
	}
}

/* Frees the tail's tensor called name (the logits, the loss). */
static void
mg_tf_free_tail(mg_t *m, mg_tf_t *t, const char *name)
{
	mg_free_name(m, &t->tail, name, strlen(name));
}

/* One forward of the decoder under no_grad (embeddings, layers, head). */
static void
mg_tf_infer_forward(mg_t *m, mg_tf_t *t)
{
	mg_tf_forward(m, t, NULL);
	mg_tf_tail(m, t);
}

/*
 * Decoder inference on one batch.  Without generate: y =
 * model(input_ids=x).logits (the cache of use_cache=True dies with the
 * output object), then del x, y.  With generate=N, the loop of
 * generate() with greedy decoding, written out:
 *   logits = model(ids, past_key_values=cache, logits_to_keep=1)
 *   tok = logits[:, -1].argmax(-1, keepdim=True); del logits
 *   N times: logits = model(tok, cache, ...); tok = ...argmax...; del logits
 *   del cache, tok, ids
 */
static void
mg_tf_infer(mg_t *m, mg_tf_t *t)
{
	const msim_model_cfg_t *c = m->cfg;
	uint64_t T0 = m->T;
	m->batch_id = mg_alloc(m, m->B * T0 * 8);
	m->kv_on = c->generate || !c->no_cache;
	m->decode = false;
	m->S = T0;
	m->TL = c->generate ? 1 : T0;
	mg_tf_infer_forward(m, t);
	if (!c->generate) {
		mg_tf_kv_free(m, t);
		mg_free(m, &m->batch_id);
		mg_tf_free_tail(m, t, m->ts->loss);
		mg_tf_free_all(m, t);
		return;
	}
	int64_t tok = mg_alloc(m, m->B * 8);
	mg_tf_free_tail(m, t, m->ts->loss);
	mg_tf_free_all(m, t);
	m->decode = true;
	m->T = 1;
	m->TL = 1;
	for (uint64_t i = 0; i < c->generate && !m->err; i++) {
		m->S = T0 + i + 1;
		mg_tf_infer_forward(m, t);
		int64_t nt = mg_alloc(m, m->B * 8);
		mg_free(m, &tok);
		tok = nt;
		mg_tf_free_tail(m, t, m->ts->loss);
		mg_tf_free_all(m, t);
	}
	mg_tf_kv_free(m, t);
	mg_free(m, &tok);
	mg_free(m, &m->batch_id);
	m->decode = false;
	m->T = T0;
}

void
mg_transformer(mg_t *m)
{
	const msim_model_cfg_t *c = m->cfg;
	mg_tf_t t = {0};
	t.L = c->layers;
	t.fwd = calloc(t.L, sizeof(*t.fwd));
	t.bwd = calloc(t.L, sizeof(*t.bwd));
	t.kv = calloc(t.L, sizeof(*t.kv));
	if (!t.fwd || !t.bwd || !t.kv) {
		mg_fail(m, MSIM_ENOMEM, "out of host memory");
		goto out;
	}
	m->tf = &t;
	bool bert = c->arch == MSIM_ARCH_BERT;
	unsigned bufs = mg_tf_params(m, t.L);
	if (m->params_only)
		goto out;
	/* parameters, then buffers, in module order */
	for (unsigned i = 0; i < m->np; i++) {
		if (i == bufs && c->arch == MSIM_ARCH_LLAMA)
			mg_alloc(m, m->D / 2 * m->p); /* rotary inv_freq */
		mg_alloc(m, m->psize[i]);
	}
	uint64_t K = c->accum ? c->accum : 1, fwd = 0;
	for (uint64_t s = 0; s < c->steps && !m->err; s++) {
		if (c->inference && !bert) {
			m->T = c->seq[s % c->nseq];
			mg_tf_infer(m, &t);
			continue;
		}
		if (bert) {
			m->T = c->seq[s % c->nseq];
			m->batch_id = mg_alloc(m, m->B * m->T * 8);
			mg_tf_forward(m, &t, NULL);
			mg_tf_tail(m, &t);
			mg_tf_free_all(m, &t);
			continue;
		}
		/* K micro-batches (gradient accumulation), one optimizer
		 * step: for j in range(K): loss = model(x_j); loss.backward() */
		for (uint64_t j = 0; j < K && !m->err; j++, fwd++) {
			m->micro = j;
			m->kv_on = !c->no_cache; /* HF's use_cache default */
			m->T = c->seq[fwd % c->nseq];
			m->batch_id = mg_alloc(m, m->B * m->T * 8);
			if (!j)
				mg_zero_grad(m);
			mg_tf_forward(m, &t, m->seg);
			/* a checkpointed model drops every layer's tensors but
			 * the segment outputs before the head */
			mg_tf_tail(m, &t);
			mg_tf_backward(m, &t, m->seg);
			if (j + 1 == K)
				mg_optimizer(m, s);
			mg_free(m, &m->batch_id);
			mg_tf_free_tail(m, &t, m->ts->loss);
			mg_tf_free_all(m, &t); /* nothing should be left */
		}
		m->micro = 0;
	}
out:
	m->tf = NULL;
	free(t.fwd);
	free(t.bwd);
	free(t.kv);
}
