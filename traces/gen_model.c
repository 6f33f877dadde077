/*
 * The model-shaped generator (gen_model.h).  Transformers are driven by
 * tensor scripts (gen_model_scripts.c), interpreted here against scopes of
 * named tensors, one scope a layer and phase; ResNet-50 is modelled op by
 * op in C (conv, batch norm, in-place ReLU and residual add, with the
 * autocast weight casts and cuDNN workspaces).  The parts common to every
 * model are here too: the parameters (allocated first, in module order),
 * zero_grad(set_to_none) freeing gradients in parameter order, AdamW and
 * SGD-with-momentum steps as torch.optim's foreach implementation runs
 * them (state created at the first step; AdamW's one list of temporaries,
 * freed in reverse), GradScaler's small tensors, and checkpoint schedules
 * (segments of layers whose activations are dropped after the forward and
 * recomputed in backward, counted in layer-forwards).
 *
 * Cost: linear in the requests generated; a budget schedule costs one dry
 * one-step run per candidate (layers^2 candidates at most).
 */
#include <config.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/gen_model.h"
#include "traces/gen_model_scripts.h"

#define MG_NAMES 96

typedef struct mg_scope_s {
	char names[MG_NAMES][8];
	int32_t ids[MG_NAMES]; /* -1 once freed */
	int n;
	bool recompute; /* built by a recomputation */
} mg_scope_t;

typedef struct mg_ctx_s {
	mg_scope_t *cur, *prev, *prev2, *own, *next, *prevf, *pre, *tail;
	mg_scope_t *kv;   /* the layer's KV cache (kept across forwards) */
	unsigned gbase;   /* absolute index of the scope's parameter 0 */
	bool local_frees; /* recomputation: free only inside cur/prev */
} mg_ctx_t;

typedef struct mg_s {
	msim_gen_t *g;
	const msim_model_cfg_t *cfg;
	const msim_tscripts_t *ts;
	uint64_t B, T, H, N, F, V, P, Q, a, p;
	uint64_t D, KV, S, TL; /* head dim, kv heads, cached length, logit rows */
	bool kv_on;        /* this forward updates a KV cache */
	bool decode;       /* a decode step (one token against the cache) */
	bool quant;        /* weight-only int8/fp8 linear layers */
	uint64_t micro;    /* micro-batch of the step (gradient accumulation) */
	uint64_t *psize;  /* bytes of each parameter */
	int64_t *grad;    /* id of each parameter's gradient, -1 if none */
	unsigned np, maxparam;
	bool ws_fwd, ws_bwd, ws_bwd_lt;
	int64_t batch_id, loss_id;
	bool opt_state;    /* optimizer state exists */
	int64_t *state;    /* ids of the optimizer state, 2 a parameter */
	int64_t scaler[2]; /* GradScaler's scale and growth tracker */
	int64_t found_inf, inv_scale; /* GradScaler's, during a step */
	struct mg_tf_s *tf; /* the transformer being generated */
	bool params_only;  /* lay out the parameters, allocate nothing */
	const uint32_t *seg;
	int err;
	char *why;
	size_t whylen;
} mg_t;

static void
mg_fail(mg_t *m, int code, const char *fmt, ...)
{
	if (m->err)
		return;
	m->err = code;
	va_list ap;
	va_start(ap, fmt);
	if (m->why && m->whylen)
		vsnprintf(m->why, m->whylen, fmt, ap);
	va_end(ap);
}

static int64_t
mg_alloc(mg_t *m, uint64_t bytes)
{
	if (bytes == 0)
		bytes = 1;
	int64_t id = msim_gen_alloc(m->g, bytes, 0);
	if (id < 0)
		mg_fail(m, MSIM_ENOMEM, "out of host memory");
	return id;
}

static void
mg_free(mg_t *m, int64_t *id)
{
	if (*id >= 0)
		msim_gen_free(m->g, (uint32_t)*id);
	*id = -1;
}

/* ---- expressions and scripts ---------------------------------------- */

static uint64_t
mg_ws(mg_t *m, uint64_t n)
{
	uint64_t w = n * m->B * m->T * 8, cap = 132 * MSIM_MiB;
	return w < cap ? w : cap;
}

static uint64_t
mg_sym(mg_t *m, const char *s, size_t len)
{
#define IS(x) (len == sizeof(x) - 1 && !memcmp(s, x, len))
	if (IS("B")) return m->B;
	if (IS("T")) return m->T;
	if (IS("T1")) return m->T + 1;
	if (IS("H")) return m->H;
	if (IS("N")) return m->N;
	if (IS("F")) return m->F;
	if (IS("V")) return m->V;
	if (IS("P")) return m->P;
	if (IS("Q")) return m->Q;
	if (IS("HN")) return m->H + m->N;
	if (IS("a")) return m->a;
	if (IS("p")) return m->p;
	if (IS("WH")) return mg_ws(m, m->H);
	if (IS("WF")) return mg_ws(m, m->F);
	if (IS("WQ")) return mg_ws(m, m->Q);
	if (IS("SH")) return m->H / 32;
	if (IS("SF")) return m->F / 32;
	if (IS("SQ")) return m->Q / 32;
	if (IS("EM1")) return m->B * m->T * 17 + 10000;
	if (IS("EM2")) return m->B * m->T * 9;
	if (IS("EM3")) return m->B * m->T * 3379;
	if (IS("S")) return m->S;
	if (IS("D")) return m->D;
	if (IS("D2")) return m->D / 2;
	if (IS("KV")) return m->KV;
	if (IS("KD")) return m->KV * m->D;
	if (IS("TL")) return m->TL;
#undef IS
	mg_fail(m, MSIM_EINVAL, "script: unknown symbol '%.*s'", (int)len, s);
	return 0;
}

static uint64_t
mg_eval(mg_t *m, const char *s, size_t len)
{
	uint64_t v = 1;
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && s[j] != '*')
			j++;
		if (s[i] >= '0' && s[i] <= '9')
			v *= strtoull(s + i, NULL, 10);
		else
			v *= mg_sym(m, s + i, j - i);
		i = j + 1;
	}
	return v;
}

static int32_t *
mg_lookup(mg_scope_t *sc, const char *name, size_t len)
{
	if (!sc || len >= 8)
		return NULL;
	for (int i = sc->n; i-- > 0;)
		if (!strncmp(sc->names[i], name, len) && !sc->names[i][len])
			return &sc->ids[i];
	return NULL;
}

static void
mg_bind(mg_t *m, mg_scope_t *sc, const char *name, size_t len, int64_t id)
{
	int32_t *slot = mg_lookup(sc, name, len);
	if (slot && *slot < 0) {
		*slot = (int32_t)id;
		return;
	}
	if (sc->n == MG_NAMES || len >= 8) {
		mg_fail(m, MSIM_EINVAL, "script: scope full");
		return;
	}
	memcpy(sc->names[sc->n], name, len);
	sc->names[sc->n][len] = 0;
	sc->ids[sc->n++] = (int32_t)id;
}

static void
mg_scope_reset(mg_scope_t *sc)
{
	sc->n = 0;
	sc->recompute = false;
}

/* Frees every live tensor of sc except the one named keep (may be NULL). */
static void
mg_scope_drop(mg_t *m, mg_scope_t *sc, const char *keep)
{
	for (int i = 0; i < sc->n; i++) {
		if (keep && !strcmp(sc->names[i], keep))
			continue;
		if (sc->names[i][0] == 'G')
			continue;
		int64_t id = sc->ids[i];
		mg_free(m, &id);
		sc->ids[i] = -1;
	}
}

/*
 * The cuBLAS workspaces, allocated through the caching allocator at a
 * handle's first use: 32 MiB for cuBLAS (the Hopper default) and 1 MiB
 * for cuBLASLt, which only the linear layers with a bias use (addmm's
 * gemm_and_bias epilogue; Llama's bias-free projections and a
 * weight-only layer's torch.mm do not).  Autograd's device thread has
 * its own handle, so its own workspaces: cuBLAS's at the first backward
 * matmul, cuBLASLt's when a checkpoint's recompute runs a biased layer
 * there (rec: the "!ws" of a recomputed forward).
 */
static void
mg_workspace(mg_t *m, bool bwd, bool rec)
{
	bool lt = m->cfg->arch != MSIM_ARCH_LLAMA && !m->quant;
	if (rec) {
		if (lt && !m->ws_bwd_lt) {
			m->ws_bwd_lt = true;
			mg_alloc(m, 1 * MSIM_MiB);
		}
	} else if (!bwd && !m->ws_fwd) {
		m->ws_fwd = true;
		mg_alloc(m, 32 * MSIM_MiB); /* cuBLAS, Hopper default */
		if (lt)
			mg_alloc(m, 1 * MSIM_MiB);  /* cuBLASLt */
	} else if (bwd && !m->ws_bwd) {
		m->ws_bwd = true; /* autograd's device thread: its own handle */
		mg_alloc(m, 32 * MSIM_MiB);
	}
}

/* Autocast exit: the cache lets go of the casts nobody saved. */
static void
mg_cast_exit(mg_t *m, mg_scope_t *sc)
{
	const char *c = m->ts->casts;
	while (c && *c) {
		while (*c == ' ')
			c++;
		size_t len = strcspn(c, " ");
		if (!len)
			break;
		int32_t *slot = mg_lookup(sc, c, len);
		if (slot) {
			int64_t id = *slot;
			mg_free(m, &id);
			*slot = -1;
		}
		c += len;
	}
}

static void mg_exit_all(mg_t *m);
struct mg_tf_s;
static void mg_tf_kv_free(mg_t *m, struct mg_tf_s *t);

/* Whether every flag of a "?flags:" prefix holds (gen_model_scripts.h). */
static bool
mg_flags(mg_t *m, const char *f, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		bool ok;
		switch (f[i]) {
		case 'c': ok = m->kv_on; break;
		case 'u': ok = !m->kv_on; break;
		case 'd': ok = m->decode; break;
		case 'f': ok = !m->decode; break;
		case 'w': ok = m->quant; break;
		case 'n': ok = !m->quant; break;
		case 'h': ok = m->a == 2; break;
		case 's': ok = m->a == 4; break;
		case 'r': ok = m->KV < m->N; break;
		default:
			mg_fail(m, MSIM_EINVAL, "script: unknown flag '%c'",
				f[i]);
			return false;
		}
		if (!ok)
			return false;
	}
	return true;
}

/* The scope a reference's prefix names (gen_model_scripts.h); advances
 * *n past the prefix. */
static mg_scope_t *
mg_ref_scope(const mg_ctx_t *x, const char **n, size_t *nl)
{
	const char *s = *n;
	size_t l = *nl, skip = 0;
	mg_scope_t *sc = x->cur;
	if (l >= 2 && s[0] == '^' && s[1] == '^')
		sc = x->prev2, skip = 2;
	else if (l && s[0] == '^')
		sc = x->prev, skip = 1;
	else if (l >= 2 && s[0] == '@' && s[1] == '>')
		sc = x->next, skip = 2;
	else if (l >= 2 && s[0] == '@' && s[1] == '<')
		sc = x->prevf, skip = 2;
	else if (l && s[0] == '@')
		sc = x->own, skip = 1;
	else if (l && s[0] == '&')
		sc = x->pre, skip = 1;
	else if (l && s[0] == '%')
		sc = x->tail, skip = 1;
	else if (l && s[0] == '$')
		sc = x->kv, skip = 1;
	*n = s + skip;
	*nl = l - skip;
	return sc;
}

/* Whether the names list (space-separated) holds name. */
static bool
mg_listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *c = list; c && *c;) {
		while (*c == ' ')
			c++;
		size_t len = strcspn(c, " ");
		if (len == n && !memcmp(c, name, n))
			return true;
		c += len;
	}
	return false;
}

/* Frees the tensor named name in sc (if it is live). */
static void
mg_free_name(mg_t *m, mg_scope_t *sc, const char *name, size_t len)
{
	int32_t *slot = mg_lookup(sc, name, len);
	if (slot && *slot >= 0) {
		int64_t id = *slot;
		mg_free(m, &id);
		*slot = -1;
	}
}

static void
mg_run(mg_t *m, const char *script, const mg_ctx_t *x)
{
	const char *s = script;
	while (*s && !m->err) {
		while (*s == ' ')
			s++;
		size_t len = strcspn(s, " ");
		if (!len)
			break;
		const char *tok = s;
		s += len;
		if (tok[0] == '?') {
			const char *colon = memchr(tok, ':', len);
			if (!colon) {
				mg_fail(m, MSIM_EINVAL, "script: bad token "
					"'%.*s'", (int)len, tok);
				return;
			}
			if (!mg_flags(m, tok + 1, (size_t)(colon - tok - 1)))
				continue;
			len -= (size_t)(colon + 1 - tok);
			tok = colon + 1;
		}
		if (tok[0] == '$') {
			/* torch.cat([cache, new]) into the layer's cache: the
			 * new tensor, then the old one let go */
			const char *eq = memchr(tok, '=', len);
			if (!eq || !x->kv) {
				mg_fail(m, MSIM_EINVAL, "script: bad token "
					"'%.*s'", (int)len, tok);
				return;
			}
			size_t nl = (size_t)(eq - tok - 1);
			uint64_t bytes = mg_eval(m, eq + 1, len - nl - 2);
			int64_t id = bytes ? mg_alloc(m, bytes) : -1;
			mg_free_name(m, x->kv, tok + 1, nl);
			mg_bind(m, x->kv, tok + 1, nl, id);
			continue;
		}
		if (tok[0] == '!') {
			if (len == 3 && !memcmp(tok, "!ws", 3))
				mg_workspace(m, false, x->local_frees);
			else if (len == 4 && !memcmp(tok, "!wsb", 4))
				mg_workspace(m, true, false);
			else if (len == 5 && !memcmp(tok, "!exit", 5))
				mg_exit_all(m);
			else if (len == 6 && !memcmp(tok, "!batch", 6))
				mg_free(m, &m->batch_id);
			continue;
		}
		if (tok[0] == '>') {
			/* >REF:name: the tensor REF becomes this scope's name
			 * (an in-place accumulation handed on) */
			const char *colon = memchr(tok, ':', len);
			if (!colon) {
				mg_fail(m, MSIM_EINVAL, "script: bad token "
					"'%.*s'", (int)len, tok);
				return;
			}
			mg_scope_t *sc;
			const char *n = tok + 1;
			size_t nl = (size_t)(colon - n);
			sc = mg_ref_scope(x, &n, &nl);
			int32_t *slot = mg_lookup(sc, n, nl);
			int64_t id = slot ? *slot : -1;
			if (slot)
				*slot = -1;
			mg_bind(m, x->cur, colon + 1,
				len - (size_t)(colon + 1 - tok), id);
			continue;
		}
		if (tok[0] == '-') {
			mg_scope_t *sc;
			const char *n = tok + 1;
			size_t nl = len - 1;
			sc = mg_ref_scope(x, &n, &nl);
			if (x->local_frees && sc != x->cur &&
			    !(sc == x->prev && sc && sc->recompute))
				continue;
			int32_t *slot = mg_lookup(sc, n, nl);
			if (slot && *slot >= 0) {
				int64_t id = *slot;
				mg_free(m, &id);
				*slot = -1;
			}
			continue;
		}
		const char *eq = memchr(tok, '=', len);
		if (!eq) {
			mg_fail(m, MSIM_EINVAL, "script: bad token '%.*s'",
				(int)len, tok);
			return;
		}
		size_t nl = (size_t)(eq - tok);
		const char *ex = eq + 1;
		size_t exl = len - nl - 1;
		const char *tilde = memchr(ex, '~', exl);
		if (tilde) {
			/* a linear layer; with weight-only quantization its
			 * weight is dequantized to the activations' dtype for
			 * the matmul, whose output is then scaled:
			 * torch.mm(x, w.to(x.dtype)) * scale */
			size_t wl = exl - (size_t)(tilde + 1 - ex);
			exl = (size_t)(tilde - ex);
			if (m->quant) {
				int64_t dq = mg_alloc(m, mg_eval(m, tilde + 1,
								 wl) * m->a);
				int64_t u = mg_alloc(m, mg_eval(m, ex, exl));
				mg_free(m, &dq);
				int64_t id = mg_alloc(m, mg_eval(m, ex, exl));
				mg_free(m, &u);
				mg_bind(m, x->cur, tok, nl, id);
				continue;
			}
		}
		uint64_t bytes = mg_eval(m, ex, exl);
		if (!bytes) { /* an empty tensor: no block */
			mg_bind(m, x->cur, tok, nl, -1);
			continue;
		}
		int64_t id = mg_alloc(m, bytes);
		if (id < 0)
			return;
		if (tok[0] != 'G') /* gradients belong to grad[], not scopes */
			mg_bind(m, x->cur, tok, nl, id);
		else {
			unsigned k;
			if (tok[1] == 'A')
				k = (unsigned)strtoul(tok + 2, NULL, 10);
			else
				k = x->gbase + (unsigned)strtoul(tok + 1, NULL, 10);
			if (k < m->np) {
				if (m->micro && m->grad[k] >= 0) {
					/* AccumulateGrad: variable.grad +=
					 * new_grad, in place; the new one
					 * is let go */
					int64_t nid = id;
					mg_free(m, &nid);
				} else {
					mg_free(m, &m->grad[k]); /* stale */
					m->grad[k] = id;
				}
			} else {
				mg_fail(m, MSIM_EINVAL, "script: no parameter "
					"%u for '%.*s'", k, (int)len, tok);
			}
		}
	}
}

/* ---- parameters, zero_grad, optimizers -------------------------------- */

static void
mg_param(mg_t *m, uint64_t elems)
{
	if (m->np < m->maxparam)
		m->psize[m->np++] = elems * m->p;
}

static void
mg_zero_grad(mg_t *m)
{
	for (unsigned i = 0; i < m->np; i++)
		mg_free(m, &m->grad[i]);
}

static void
mg_optimizer(mg_t *m, uint64_t step)
{
	const msim_model_cfg_t *c = m->cfg;
	if (c->dtype == MSIM_DT_FP16_AMP && step < c->scaler_skips)
		return; /* inf/NaN found: GradScaler skips optimizer.step() */
	if (c->optimizer == MSIM_OPT_SGD) {
		/* _multi_tensor_sgd: momentum_buffer = clone(grad) the first
		 * time, then in-place foreach ops: no temporaries. */
		if (!m->opt_state) {
			for (unsigned i = 0; i < m->np; i++)
				m->state[2 * i] = mg_alloc(m, m->psize[i]);
			m->opt_state = true;
		}
		return;
	}
	/* _multi_tensor_adamw: exp_avg, exp_avg_sq = zeros at the first
	 * step, param by param; then exp_avg_sq_sqrt = _foreach_sqrt(...),
	 * divided and added to in place, freed after addcdiv_. */
	if (!m->opt_state) {
		for (unsigned i = 0; i < m->np; i++) {
			m->state[2 * i] = mg_alloc(m, m->psize[i]);
			m->state[2 * i + 1] = mg_alloc(m, m->psize[i]);
		}
		m->opt_state = true;
	}
	int64_t *tmp = malloc(m->np * sizeof(*tmp));
	if (!tmp) {
		mg_fail(m, MSIM_ENOMEM, "out of host memory");
		return;
	}
	for (unsigned i = 0; i < m->np; i++)
		tmp[i] = mg_alloc(m, m->psize[i]);
	for (unsigned i = m->np; i-- > 0;)
		mg_free(m, &tmp[i]);
	free(tmp);
}

/* GradScaler: scale(loss) (the scale and growth tracker are created the
 * first time), unscale_ (found_inf, inv_scale), update. */
static int64_t
mg_scaler_scale(mg_t *m)
{
	if (m->cfg->dtype != MSIM_DT_FP16_AMP)
		return -1;
	if (m->scaler[0] < 0) {
		m->scaler[0] = mg_alloc(m, 4);
		m->scaler[1] = mg_alloc(m, 4);
	}
	return mg_alloc(m, 4);
}

static void
mg_scaler_step(mg_t *m, bool before)
{
	if (m->cfg->dtype != MSIM_DT_FP16_AMP)
		return;
	if (before) {
		m->inv_scale = mg_alloc(m, 4);
		m->found_inf = mg_alloc(m, 4);
	} else {
		mg_free(m, &m->inv_scale);
		mg_free(m, &m->found_inf);
	}
}

/* ---- transformers ------------------------------------------------------ */

typedef struct mg_tf_s {
	mg_scope_t *fwd, *bwd, pre, tail, prebwd;
	mg_scope_t *kv; /* each layer's KV cache, kept across forwards */
	uint64_t L;
} mg_tf_t;

static void
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
static void
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

static void
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

/* ---- ResNet-50 ----------------------------------------------------------- */

typedef struct rn_conv_s {
	uint64_t cin, cout, k, stride, hin, hout;
	int64_t wcast, in_saved, out, bnout, mean, invstd;
	bool own_input; /* the conv's cast input belongs to it */
} rn_conv_t;

typedef struct rn_block_s {
	rn_conv_t c[4]; /* conv1..3, downsample */
	bool ds;
	int64_t in;  /* block input (saved by conv1 and as identity) */
	int64_t out; /* block output (bn3 out after += and relu) */
} rn_block_t;

/* cuDNN's workspace of a convolution, as chosen on an H200 (fitted). */
static uint64_t
rn_conv_ws(const rn_conv_t *c, uint64_t outbytes)
{
	if (c->k == 7)
		return outbytes + outbytes / 4;
	if (c->k == 3)
		return c->stride == 1 ? 2 * outbytes : 5 * outbytes;
	if (c->stride == 2)
		return 3 * outbytes;
	return 0;
}

static void
rn_conv_fwd(mg_t *m, rn_conv_t *c, int64_t in)
{
	uint64_t a = m->a, B = m->B;
	bool amp = m->cfg->dtype == MSIM_DT_BF16_AMP ||
		   m->cfg->dtype == MSIM_DT_FP16_AMP;
	c->wcast = amp ? mg_alloc(m, c->cout * c->cin * c->k * c->k * 2) : -1;
	c->in_saved = in;
	uint64_t ob = B * c->cout * c->hout * c->hout * a;
	c->out = mg_alloc(m, ob);
	uint64_t ws = rn_conv_ws(c, ob);
	if (ws) {
		int64_t w = mg_alloc(m, ws);
		mg_free(m, &w);
	}
	c->bnout = mg_alloc(m, ob);
	c->mean = mg_alloc(m, c->cout * 4);
	c->invstd = mg_alloc(m, c->cout * 4);
}

/* AccumulateGrad: the first gradient of a step becomes .grad; later
 * micro-batches add theirs in place and let it go. */
static void
rn_accumulate(mg_t *m, unsigned idx, int64_t g)
{
	if (m->micro && m->grad[idx] >= 0) {
		mg_free(m, &g);
		return;
	}
	mg_free(m, &m->grad[idx]);
	m->grad[idx] = g;
}

static void
rn_grad(mg_t *m, unsigned idx, uint64_t bytes_lowp)
{
	bool amp = m->cfg->dtype == MSIM_DT_BF16_AMP ||
		   m->cfg->dtype == MSIM_DT_FP16_AMP;
	int64_t lp = amp ? mg_alloc(m, bytes_lowp) : -1;
	int64_t g = mg_alloc(m, m->psize[idx]);
	mg_free(m, &lp);
	rn_accumulate(m, idx, g);
}

/* bn + conv backward of c; dy is the gradient at the bn output (freed).
 * Returns the gradient at the conv input (or -1 for the stem). */
static int64_t
rn_conv_bwd(mg_t *m, rn_conv_t *c, int64_t dy, unsigned pidx, bool stem)
{
	uint64_t a = m->a, B = m->B;
	uint64_t ob = B * c->cout * c->hout * c->hout * a;
	int64_t dbn = mg_alloc(m, ob);
	rn_accumulate(m, pidx + 1, mg_alloc(m, m->psize[pidx + 1]));
	rn_accumulate(m, pidx + 2, mg_alloc(m, m->psize[pidx + 2]));
	mg_free(m, &dy);
	mg_free(m, &c->out);
	mg_free(m, &c->mean);
	mg_free(m, &c->invstd);
	int64_t dx = -1;
	if (!stem)
		dx = mg_alloc(m, B * c->cin * c->hin * c->hin * a);
	uint64_t ws = rn_conv_ws(c, ob);
	if (ws) {
		int64_t w = mg_alloc(m, ws);
		mg_free(m, &w);
	}
	if (ws) { /* the weight-gradient kernel has its own */
		int64_t w = mg_alloc(m, ws);
		mg_free(m, &w);
	}
	rn_grad(m, pidx, c->cout * c->cin * c->k * c->k * 2);
	mg_free(m, &dbn);
	mg_free(m, &c->wcast);
	if (c->own_input)
		mg_free(m, &c->in_saved);
	return dx;
}

static void
mg_resnet50(mg_t *m)
{
	const msim_model_cfg_t *c = m->cfg;
	static const unsigned depth[4] = {3, 4, 6, 3};
	uint64_t S = c->image, B = m->B, a = m->a;
	bool amp = c->dtype == MSIM_DT_BF16_AMP || c->dtype == MSIM_DT_FP16_AMP;
	rn_block_t blk[16];
	rn_conv_t stem = {.cin = 3, .cout = 64, .k = 7, .stride = 2, .hin = S,
			  .hout = (S + 1) / 2, .own_input = true};
	unsigned nb = 0;
	uint64_t h = (stem.hout + 1) / 2, cin = 64;
	/* parameters: conv weight, bn weight, bn bias (+ running stats,
	 * which are buffers: allocated but not optimised) */
	mg_param(m, 64 * 3 * 49);
	mg_param(m, 64);
	mg_param(m, 64);
	for (unsigned s = 0; s < 4; s++) {
		uint64_t w = 64u << s, cout = 4 * w;
		for (unsigned b = 0; b < depth[s]; b++) {
			rn_block_t *k = &blk[nb++];
			memset(k, 0, sizeof(*k));
			uint64_t st = (s > 0 && b == 0) ? 2 : 1;
			uint64_t ho = st == 2 ? h / 2 : h;
			k->c[0] = (rn_conv_t){cin, w, 1, 1, h, h, -1, -1, -1,
					      -1, -1, -1, false};
			k->c[1] = (rn_conv_t){w, w, 3, st, h, ho, -1, -1, -1,
					      -1, -1, -1, true};
			k->c[2] = (rn_conv_t){w, cout, 1, 1, ho, ho, -1, -1,
					      -1, -1, -1, -1, true};
			k->ds = b == 0;
			if (k->ds)
				k->c[3] = (rn_conv_t){cin, cout, 1, st, h, ho,
						      -1, -1, -1, -1, -1, -1,
						      false};
			for (unsigned q = 0; q < (k->ds ? 4u : 3u); q++) {
				mg_param(m, k->c[q].cout * k->c[q].cin *
						    k->c[q].k * k->c[q].k);
				mg_param(m, k->c[q].cout);
				mg_param(m, k->c[q].cout);
			}
			cin = cout;
			h = ho;
		}
	}
	mg_param(m, 1000 * 2048);
	mg_param(m, 1000);
	if (m->params_only)
		return;
	for (unsigned i = 0; i < m->np; i++) {
		mg_alloc(m, m->psize[i]);
		if (i + 2 < m->np && i % 3 == 2) {
			/* bn buffers: running_mean, running_var,
			 * num_batches_tracked (fp32 even under bf16) */
			mg_alloc(m, m->psize[i] / m->p * 4);
			mg_alloc(m, m->psize[i] / m->p * 4);
			mg_alloc(m, 8);
		}
	}
	uint64_t K = c->accum ? c->accum : 1;
	for (uint64_t it = 0; it < c->steps * K && !m->err; it++) {
		uint64_t step = it / K;
		m->micro = it % K; /* gradient accumulation's micro-batch */
		int64_t x = mg_alloc(m, B * 3 * S * S * 4);
		int64_t y = mg_alloc(m, B * 8);
		if (!m->micro)
			mg_zero_grad(m);
		/* forward */
		int64_t xin = amp ? mg_alloc(m, B * 3 * S * S * 2) : x;
		rn_conv_fwd(m, &stem, xin);
		if (!amp)
			stem.own_input = false;
		uint64_t hp = (stem.hout + 1) / 2;
		int64_t pool = mg_alloc(m, B * 64 * hp * hp * a);
		int64_t idx = mg_alloc(m, B * 64 * hp * hp * 8);
		int64_t cur = pool;
		for (unsigned i = 0; i < nb; i++) {
			rn_block_t *k = &blk[i];
			k->in = cur;
			rn_conv_fwd(m, &k->c[0], cur);
			rn_conv_fwd(m, &k->c[1], k->c[0].bnout);
			rn_conv_fwd(m, &k->c[2], k->c[1].bnout);
			if (k->ds) {
				rn_conv_fwd(m, &k->c[3], cur);
				mg_free(m, &k->c[3].bnout); /* after += */
			}
			k->out = k->c[2].bnout;
			cur = k->out;
		}
		int64_t avg = mg_alloc(m, B * 2048 * a);
		int64_t fcw = amp ? mg_alloc(m, 1000 * 2048 * 2) : -1;
		int64_t fcb = amp ? mg_alloc(m, 1000 * 2) : -1;
		int64_t logits = mg_alloc(m, B * 1000 * a);
		mg_workspace(m, false, false);
		int64_t lf = amp ? mg_alloc(m, B * 1000 * 4) : -1;
		int64_t lsm = mg_alloc(m, B * 1000 * 4);
		int64_t loss = mg_alloc(m, 4);
		int64_t tw = mg_alloc(m, 4);
		mg_free(m, &lf);
		mg_free(m, &logits);
		mg_free(m, &fcb); /* autocast exit */
		int64_t scaled = mg_scaler_scale(m);
		/* backward */
		int64_t seed = mg_alloc(m, 4);
		int64_t g1 = mg_alloc(m, B * 1000 * 4);
		mg_free(m, &tw);
		int64_t g2 = mg_alloc(m, B * 1000 * 4);
		mg_free(m, &g1);
		mg_free(m, &lsm);
		int64_t g3 = amp ? mg_alloc(m, B * 1000 * 2) : -1;
		if (g3 >= 0)
			mg_free(m, &g2);
		else
			g3 = g2;
		unsigned pi = m->np - 2;
		mg_workspace(m, true, false);
		int64_t dav = mg_alloc(m, B * 2048 * a);
		rn_grad(m, pi, 1000 * 2048 * 2);
		rn_grad(m, pi + 1, 1000 * 2);
		mg_free(m, &g3);
		mg_free(m, &avg);
		mg_free(m, &fcw);
		uint64_t hl = blk[nb - 1].c[2].hout;
		int64_t dy = mg_alloc(m, B * 2048 * hl * hl * a);
		mg_free(m, &dav);
		for (unsigned i = nb; i-- > 0;) {
			rn_block_t *k = &blk[i];
			pi -= k->ds ? 12 : 9;
			/* relu backward (threshold on the saved output) */
			int64_t dr = mg_alloc(m, B * k->c[2].cout *
							 k->c[2].hout *
							 k->c[2].hout * a);
			mg_free(m, &dy);
			mg_free(m, &k->out);
			int64_t did = -1;
			if (k->ds) {
				int64_t dcopy = dr;
				did = rn_conv_bwd(m, &k->c[3], -1, pi + 9,
						  false);
				(void)dcopy;
			}
			int64_t d = rn_conv_bwd(m, &k->c[2], dr, pi + 6, false);
			int64_t dr2 = mg_alloc(m, B * k->c[1].cout *
							  k->c[1].hout *
							  k->c[1].hout * a);
			mg_free(m, &d);
			d = rn_conv_bwd(m, &k->c[1], dr2, pi + 3, false);
			int64_t dr1 = mg_alloc(m, B * k->c[0].cout *
							  k->c[0].hout *
							  k->c[0].hout * a);
			mg_free(m, &d);
			d = rn_conv_bwd(m, &k->c[0], dr1, pi, false);
			/* the identity path's gradient is added in place */
			mg_free(m, &did);
			if (i == 0) /* later inputs are the blocks' outputs */
				mg_free(m, &k->in);
			dy = d;
		}
		/* maxpool and stem */
		int64_t dp = mg_alloc(m, B * 64 * stem.hout * stem.hout * a);
		mg_free(m, &dy);
		mg_free(m, &idx);
		int64_t dr0 = mg_alloc(m, B * 64 * stem.hout * stem.hout * a);
		mg_free(m, &dp);
		mg_free(m, &stem.bnout);
		rn_conv_bwd(m, &stem, dr0, 0, true);
		mg_free(m, &seed);
		mg_free(m, &scaled);
		if (m->micro + 1 == K) {
			mg_scaler_step(m, true);
			mg_optimizer(m, step);
			mg_scaler_step(m, false);
		}
		mg_free(m, &x);
		mg_free(m, &y);
		mg_free(m, &loss);
	}
}

/* ---- driver ------------------------------------------------------------- */

uint64_t
msim_model_ffn(const msim_model_cfg_t *c)
{
	if (c->ffn)
		return c->ffn;
	if (c->arch == MSIM_ARCH_LLAMA) /* 8/3 x hidden, to 256 (11008) */
		return (8 * c->hidden / 3 + 255) / 256 * 256;
	return 4 * c->hidden;
}

void
msim_model_defaults(msim_model_cfg_t *cfg, int arch)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->arch = arch;
	cfg->batch = 8;
	cfg->seq[0] = 1024;
	cfg->nseq = 1;
	cfg->steps = 1;
	cfg->image = 224;
	cfg->scaler_skips = 3;
	switch (arch) {
	case MSIM_ARCH_LLAMA:
		cfg->layers = 32, cfg->hidden = 4096, cfg->heads = 32;
		cfg->vocab = 32000;
		cfg->positions = 4096;
		break;
	case MSIM_ARCH_BERT:
		cfg->layers = 12, cfg->hidden = 768, cfg->heads = 12;
		cfg->vocab = 30522, cfg->positions = 512;
		cfg->seq[0] = 512;
		cfg->inference = true;
		break;
	default:
		cfg->layers = 12, cfg->hidden = 768, cfg->heads = 12;
		cfg->vocab = 50257, cfg->positions = 1024;
		break;
	}
}

int
msim_model_check(const msim_model_cfg_t *c, char *why, size_t whylen)
{
#define BAD(...) do { snprintf(why, whylen, __VA_ARGS__); \
		return MSIM_EINVAL; } while (0)
	if (c->arch < 0 || c->arch > MSIM_ARCH_RESNET50)
		BAD("--arch: unknown architecture");
	if (!c->batch)
		BAD("--batch: must be at least 1");
	if (!c->steps)
		BAD("--steps: must be at least 1");
	if (c->arch == MSIM_ARCH_RESNET50) {
		if (c->image < 32 || c->image > 4096)
			BAD("--image: must be in [32, 4096]");
		if (c->inference)
			BAD("--inference: not modelled for resnet50");
		if (c->weights != MSIM_W_NATIVE || c->generate)
			BAD("--weights, --generate: not modelled for "
			    "resnet50");
		return 0;
	}
	if (!c->layers || c->layers > 1000)
		BAD("--layers: must be in [1, 1000]");
	if (!c->hidden || !c->heads || c->hidden % c->heads)
		BAD("--hidden: must be a multiple of --heads");
	if (c->kv_heads && c->heads % c->kv_heads)
		BAD("--kv-heads: must divide --heads");
	if (!c->vocab)
		BAD("--vocab: must be at least 1");
	if (!c->nseq)
		BAD("--seq: at least one length");
	for (size_t i = 0; i < c->nseq; i++)
		if (!c->seq[i] || c->seq[i] > c->positions)
			BAD("--seq: %llu is not in [1, --positions=%llu]",
			    (unsigned long long)c->seq[i],
			    (unsigned long long)c->positions);
	if (c->arch == MSIM_ARCH_BERT && !c->inference)
		BAD("--arch bert: only --inference is modelled");
	if (c->inference && c->dtype != MSIM_DT_FP32 &&
	    c->dtype != MSIM_DT_BF16)
		BAD("--dtype: inference is modelled in fp32 and bf16 (the "
		    "model's own dtype)");
	if (c->arch == MSIM_ARCH_LLAMA && !c->inference &&
	    c->dtype != MSIM_DT_FP32 && c->dtype != MSIM_DT_BF16)
		BAD("--dtype: llama training is modelled in fp32 and bf16");
	if (c->generate && (!c->inference || c->arch == MSIM_ARCH_BERT))
		BAD("--generate: needs --inference and a decoder (gpt2, "
		    "llama)");
	if (c->generate && c->no_cache)
		BAD("--generate: decoding without a KV cache is not "
		    "modelled");
	for (size_t i = 0; c->generate && i < c->nseq; i++)
		if (c->seq[i] + c->generate > c->positions)
			BAD("--generate: %llu tokens after a prompt of %llu "
			    "pass --positions=%llu",
			    (unsigned long long)c->generate,
			    (unsigned long long)c->seq[i],
			    (unsigned long long)c->positions);
	if (c->weights != MSIM_W_NATIVE &&
	    (!c->inference || c->arch == MSIM_ARCH_BERT))
		BAD("--weights: weight-only quantization is modelled for "
		    "decoder inference (--inference)");
	if (c->accum && c->inference)
		BAD("--accum: gradient accumulation needs training");
	if (c->arch == MSIM_ARCH_LLAMA && c->heads && (c->hidden / c->heads) % 2)
		BAD("--heads: llama's head dim (hidden/heads) must be even "
		    "(rotary embeddings)");
	if (c->arch == MSIM_ARCH_BERT && c->dtype != MSIM_DT_FP32 &&
	    c->dtype != MSIM_DT_BF16)
		BAD("--dtype: bert inference is modelled in fp32 and bf16");
	if (c->ckpt.kind == MSIM_CKPT_EVERY && !c->ckpt.k)
		BAD("--checkpoint: every:K needs K >= 1");
	return 0;
#undef BAD
}

/* Generates c into g; params_only: lays the parameters out and counts
 * their elements into *count, allocating nothing. */
static int
mg_generate_x(const msim_model_cfg_t *c, msim_gen_t *g, const uint32_t *seg,
	      bool params_only, uint64_t *count, char *why, size_t whylen)
{
	mg_t m = {0};
	m.g = g;
	m.cfg = c;
	m.why = why;
	m.whylen = whylen;
	m.seg = seg;
	m.B = c->batch;
	m.H = c->hidden;
	m.N = c->heads;
	m.F = msim_model_ffn(c);
	m.V = c->vocab;
	m.P = c->positions;
	uint64_t kv = c->kv_heads ? c->kv_heads : c->heads;
	m.Q = c->heads ? m.H + 2 * kv * (m.H / c->heads) : 0;
	m.KV = kv;
	m.D = c->heads ? m.H / c->heads : 0;
	bool amp = c->dtype == MSIM_DT_BF16_AMP || c->dtype == MSIM_DT_FP16_AMP;
	m.p = c->dtype == MSIM_DT_BF16 ? 2 : 4;
	m.a = (amp || c->dtype == MSIM_DT_BF16) ? 2 : 4;
	m.quant = c->weights != MSIM_W_NATIVE;
	m.params_only = params_only;
	if (params_only) /* elements, not bytes */
		m.p = 1, m.quant = false;
	m.batch_id = -1;
	m.scaler[0] = m.scaler[1] = -1;
	m.found_inf = m.inv_scale = -1;
	/* a block has at most 16 parameters (32 entries with quantized
	 * weights' scales); ResNet-50 161 */
	m.maxparam = 256 + 32 * (unsigned)(c->layers < 1000 ? c->layers : 1000);
	m.psize = calloc(m.maxparam, sizeof(*m.psize));
	m.grad = malloc(m.maxparam * sizeof(*m.grad));
	m.state = malloc(2 * (size_t)m.maxparam * sizeof(*m.state));
	if (!m.psize || !m.grad || !m.state) {
		mg_fail(&m, MSIM_ENOMEM, "out of host memory");
		goto out;
	}
	for (unsigned i = 0; i < m.maxparam; i++)
		m.grad[i] = m.state[2 * i] = m.state[2 * i + 1] = -1;
	if (c->arch == MSIM_ARCH_RESNET50) {
		mg_resnet50(&m);
	} else {
		bool llama = c->arch == MSIM_ARCH_LLAMA;
		m.ts = c->arch == MSIM_ARCH_BERT ? &msim_bert_infer
		       : c->inference ? (llama ? &msim_llama_infer
					       : &msim_gpt2_infer)
		       : llama ? &msim_llama_train
		       : amp ? &msim_gpt2_amp : &msim_gpt2_fp32;
		mg_transformer(&m);
	}
	if (count) {
		*count = 0;
		for (unsigned i = 0; i < m.np; i++)
			*count += m.psize[i];
	}
	if (!m.err && g->failed)
		mg_fail(&m, MSIM_ENOMEM, "out of host memory (or a tensor "
			"freed twice: a generator bug)");
out:
	free(m.psize);
	free(m.grad);
	free(m.state);
	return m.err;
}

static int
mg_generate(const msim_model_cfg_t *c, msim_gen_t *g, const uint32_t *seg,
	    char *why, size_t whylen)
{
	return mg_generate_x(c, g, seg, false, NULL, why, whylen);
}

uint64_t
msim_model_params(const msim_model_cfg_t *c)
{
	msim_gen_t g;
	uint64_t n = 0;
	char why[64];
	msim_gen_init(&g, true);
	if (mg_generate_x(c, &g, NULL, true, &n, why, sizeof(why)))
		n = 0;
	msim_gen_clear(&g);
	return n;
}

static void
mg_uniform(uint32_t *seg, uint64_t L, uint64_t from, uint64_t k)
{
	memset(seg, 0, L * sizeof(*seg));
	for (uint64_t i = from; i < L && k; i += k)
		seg[i] = (uint32_t)(i + k <= L ? k : L - i);
}

int
msim_model_schedule(const msim_model_cfg_t *c, uint32_t *seg, char *why,
		    size_t whylen)
{
	uint64_t L = c->layers;
	memset(seg, 0, L * sizeof(*seg));
	switch (c->ckpt.kind) {
	case MSIM_CKPT_NONE:
		return 0;
	case MSIM_CKPT_EVERY:
		mg_uniform(seg, L, 0, c->ckpt.k);
		return 0;
	case MSIM_CKPT_SQRT:
		mg_uniform(seg, L, 0, (uint64_t)ceil(sqrt((double)L)));
		return 0;
	default:
		break;
	}
	/* BUDGET: the first m layers checkpointed in segments of k, the
	 * last L - m stored (backward reaches them first); the least
	 * recomputation (m) whose one-step peak fits, then the lowest peak. */
	msim_model_cfg_t one = *c;
	one.steps = c->steps < 2 ? c->steps : 2; /* with optimizer state */
	uint32_t *cand = malloc(L * sizeof(*cand));
	if (!cand)
		return MSIM_ENOMEM;
	uint64_t best_m = UINT64_MAX, best_peak = UINT64_MAX, lowest = UINT64_MAX;
	for (uint64_t mm = 0; mm <= L; mm++) {
		for (uint64_t k = mm ? 1 : 0; k <= (mm ? mm : 0); k++) {
			if (mm)
				mg_uniform(cand, mm, 0, k);
			for (uint64_t i = mm; i < L; i++)
				cand[i] = 0;
			msim_gen_t g;
			msim_gen_init(&g, !c->ckpt.measure);
			int rc = mg_generate(&one, &g, mm ? cand : NULL, why,
					     whylen);
			uint64_t pk = g.peak;
			if (!rc && c->ckpt.measure &&
			    (rc = c->ckpt.measure(c->ckpt.measure_ctx, &g,
						  &pk)))
				snprintf(why, whylen, "--checkpoint: budget: "
					 "%s", msim_strerror(rc));
			msim_gen_clear(&g);
			if (rc) {
				free(cand);
				return rc;
			}
			if (pk < lowest)
				lowest = pk;
			if (pk <= c->ckpt.budget &&
			    (mm < best_m || (mm == best_m && pk < best_peak))) {
				best_m = mm;
				best_peak = pk;
				memcpy(seg, cand, L * sizeof(*seg));
			}
			if (!mm)
				break;
		}
		if (best_m != UINT64_MAX)
			break; /* recomputation only grows with mm */
	}
	free(cand);
	if (best_m == UINT64_MAX && lowest == UINT64_MAX) {
		snprintf(why, whylen, "--checkpoint: budget %llu bytes: "
			 "every schedule runs out of memory under the cap",
			 (unsigned long long)c->ckpt.budget);
		return MSIM_EINVAL;
	}
	if (best_m == UINT64_MAX) {
		snprintf(why, whylen, "--checkpoint: budget %llu bytes is "
			 "below the lowest reachable peak %llu",
			 (unsigned long long)c->ckpt.budget,
			 (unsigned long long)lowest);
		return MSIM_EINVAL;
	}
	return 0;
}

int
msim_model_generate(const msim_model_cfg_t *c, msim_gen_t *g, char *why,
		    size_t whylen)
{
	int rc = msim_model_check(c, why, whylen);
	if (rc)
		return rc;
	uint32_t *seg = NULL;
	if (c->ckpt.kind != MSIM_CKPT_NONE && c->arch != MSIM_ARCH_RESNET50 &&
	    !c->inference) {
		seg = calloc(c->layers, sizeof(*seg));
		if (!seg)
			return MSIM_ENOMEM;
		rc = msim_model_schedule(c, seg, why, whylen);
	}
	if (!rc)
		rc = mg_generate(c, g, seg, why, whylen);
	free(seg);
	return rc;
}

const char *
msim_arch_name(int arch)
{
	static const char *const n[] = {"gpt2", "llama", "bert", "resnet50"};
	return arch >= 0 && arch <= MSIM_ARCH_RESNET50 ? n[arch] : "?";
}

static const char *const dtype_names[] = {"fp32", "bf16-amp", "fp16-amp",
					  "bf16"};
static const char *const weights_names[] = {"native", "int8", "fp8"};

const char *
msim_weights_name(int w)
{
	return w >= 0 && w <= MSIM_W_FP8 ? weights_names[w] : "?";
}

int
msim_weights_parse(const char *s)
{
	for (int i = 0; i <= MSIM_W_FP8; i++)
		if (!strcmp(s, weights_names[i]))
			return i;
	return -1;
}

const char *
msim_dtype_name(int dtype)
{
	return dtype >= 0 && dtype <= MSIM_DT_BF16 ? dtype_names[dtype] : "?";
}

int
msim_dtype_parse(const char *s)
{
	for (int i = 0; i <= MSIM_DT_BF16; i++)
		if (!strcmp(s, dtype_names[i]))
			return i;
	return -1;
}

int
msim_ckpt_parse(const char *s, msim_ckpt_t *out)
{
	memset(out, 0, sizeof(*out));
	char *end;
	if (!strcmp(s, "none"))
		return 0;
	if (!strcmp(s, "sqrt")) {
		out->kind = MSIM_CKPT_SQRT;
		return 0;
	}
	if (!strncmp(s, "every:", 6)) {
		unsigned long long k = strtoull(s + 6, &end, 10);
		if (end == s + 6 || *end || !k)
			return MSIM_EINVAL;
		out->kind = MSIM_CKPT_EVERY;
		out->k = k;
		return 0;
	}
	if (!strncmp(s, "budget:", 7)) {
		double v = strtod(s + 7, &end);
		double mult = 1;
		if (!strcmp(end, "GiB") || !strcmp(end, "G"))
			mult = 1073741824.0;
		else if (!strcmp(end, "MiB") || !strcmp(end, "M"))
			mult = 1048576.0;
		else if (!strcmp(end, "GB"))
			mult = 1e9;
		else if (*end)
			return MSIM_EINVAL;
		if (end == s + 7 || !(v > 0))
			return MSIM_EINVAL;
		out->kind = MSIM_CKPT_BUDGET;
		out->budget = (uint64_t)(v * mult);
		return 0;
	}
	return MSIM_EINVAL;
}
