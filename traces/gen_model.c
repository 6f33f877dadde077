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
#define MG_MAXPARAM 4096

typedef struct mg_scope_s {
	char names[MG_NAMES][8];
	int32_t ids[MG_NAMES]; /* -1 once freed */
	int n;
	bool recompute; /* built by a recomputation */
} mg_scope_t;

typedef struct mg_ctx_s {
	mg_scope_t *cur, *prev, *prev2, *own, *next, *prevf, *pre, *tail;
	unsigned gbase;   /* absolute index of the scope's parameter 0 */
	bool local_frees; /* recomputation: free only inside cur/prev */
} mg_ctx_t;

typedef struct mg_s {
	msim_gen_t *g;
	const msim_model_cfg_t *cfg;
	const msim_tscripts_t *ts;
	uint64_t B, T, H, N, F, V, P, Q, a, p;
	uint64_t *psize;  /* bytes of each parameter */
	int64_t *grad;    /* id of each parameter's gradient, -1 if none */
	unsigned np;
	bool ws_fwd, ws_bwd;
	int64_t batch_id, loss_id;
	bool opt_state;    /* optimizer state exists */
	int64_t *state;    /* ids of the optimizer state, 2 a parameter */
	int64_t scaler[2]; /* GradScaler's scale and growth tracker */
	int64_t found_inf, inv_scale; /* GradScaler's, during a step */
	struct mg_tf_s *tf; /* the transformer being generated */
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

static void
mg_workspace(mg_t *m, bool bwd)
{
	if (!bwd && !m->ws_fwd) {
		m->ws_fwd = true;
		mg_alloc(m, 32 * MSIM_MiB); /* cuBLAS, Hopper default */
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
		if (tok[0] == '!') {
			if (len == 3 && !memcmp(tok, "!ws", 3))
				mg_workspace(m, false);
			else if (len == 4 && !memcmp(tok, "!wsb", 4))
				mg_workspace(m, true);
			else if (len == 5 && !memcmp(tok, "!exit", 5))
				mg_exit_all(m);
			else if (len == 6 && !memcmp(tok, "!batch", 6))
				mg_free(m, &m->batch_id);
			continue;
		}
		if (tok[0] == '-') {
			mg_scope_t *sc = x->cur;
			const char *n = tok + 1;
			size_t nl = len - 1;
			if (nl >= 2 && n[0] == '^' && n[1] == '^')
				sc = x->prev2, n += 2, nl -= 2;
			else if (n[0] == '^')
				sc = x->prev, n++, nl--;
			else if (nl >= 2 && n[0] == '@' && n[1] == '>')
				sc = x->next, n += 2, nl -= 2;
			else if (nl >= 2 && n[0] == '@' && n[1] == '<')
				sc = x->prevf, n += 2, nl -= 2;
			else if (n[0] == '@')
				sc = x->own, n++, nl--;
			else if (n[0] == '&')
				sc = x->pre, n++, nl--;
			else if (n[0] == '%')
				sc = x->tail, n++, nl--;
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
		uint64_t bytes = mg_eval(m, eq + 1, len - nl - 1);
		int64_t id = mg_alloc(m, bytes);
		if (id < 0)
			return;
		mg_bind(m, x->cur, tok, nl, id);
		if (tok[0] == 'G') {
			unsigned k;
			if (tok[1] == 'A')
				k = (unsigned)strtoul(tok + 2, NULL, 10);
			else
				k = x->gbase + (unsigned)strtoul(tok + 1, NULL, 10);
			if (k < m->np) {
				mg_free(m, &m->grad[k]); /* stale: replace */
				m->grad[k] = id;
				/* the scope must not free it: hide the name */
				x->cur->names[x->cur->n - 1][0] = 'G';
			}
		}
	}
}

/* ---- parameters, zero_grad, optimizers -------------------------------- */

static void
mg_param(mg_t *m, uint64_t elems)
{
	if (m->np < MG_MAXPARAM)
		m->psize[m->np++] = elems * m->p;
}

static void
mg_params_alloc(mg_t *m)
{
	for (unsigned i = 0; i < m->np; i++)
		mg_alloc(m, m->psize[i]);
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
	uint64_t L;
} mg_tf_t;

static void
mg_exit_all(mg_t *m)
{
	mg_tf_t *t = m->tf;
	for (uint64_t i = 0; t && i < t->L; i++)
		mg_cast_exit(m, &t->fwd[i]);
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
	x.gbase = 2 + (unsigned)i * m->ts->layer_params;
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
	x.gbase = 2 + (unsigned)i * m->ts->layer_params;
	mg_run(m, m->ts->layer_bwd, &x);
}

static void
mg_tf_forward(mg_t *m, mg_tf_t *t, const uint32_t *seg)
{
	mg_ctx_t x = {.cur = &t->pre, .pre = &t->pre, .tail = &t->tail};
	mg_scope_reset(&t->pre);
	mg_run(m, m->ts->pre, &x);
	for (uint64_t i = 0; i < t->L && !m->err;) {
		uint64_t k = seg ? seg[i] : 0;
		if (!k) {
			mg_layer_fwd(m, t, i, false);
			i++;
			continue;
		}
		/* A checkpointed segment: run it, then keep only its output
		 * (torch.utils.checkpoint runs the forward without saving). */
		for (uint64_t j = i; j < i + k; j++)
			mg_layer_fwd(m, t, j, false);
		for (uint64_t j = i; j < i + k; j++)
			mg_scope_drop(m, &t->fwd[j],
				      j + 1 == i + k ? m->ts->out : NULL);
		i += k;
	}
}

/* Recomputes the segment ending at layer last (backward of checkpoint). */
static void
mg_recompute(mg_t *m, mg_tf_t *t, uint64_t first, uint64_t last)
{
	mg_scope_t *lastsc = &t->fwd[last];
	int32_t *o = mg_lookup(lastsc, m->ts->out, strlen(m->ts->out));
	int64_t kept = o ? *o : -1;
	for (uint64_t j = first; j <= last; j++) {
		mg_layer_fwd(m, t, j, true);
		m->g->recompute++;
	}
	/* the original output stays the one the next layer saved */
	o = mg_lookup(lastsc, m->ts->out, strlen(m->ts->out));
	if (o && kept >= 0) {
		int64_t id = *o;
		mg_free(m, &id);
		*o = (int32_t)kept;
	}
	for (uint64_t j = first; j <= last; j++)
		mg_cast_exit(m, &t->fwd[j]);
}

static void
mg_tf_backward(mg_t *m, mg_tf_t *t, const uint32_t *seg)
{
	/* segment start of each layer, if checkpointed */
	for (uint64_t i = t->L; i-- > 0 && !m->err;) {
		if (seg) {
			for (uint64_t s = 0; s <= i; s++)
				if (seg[s] && s + seg[s] - 1 == i) {
					mg_recompute(m, t, s, i);
					break;
				}
		}
		mg_layer_bwd(m, t, i);
	}
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
	x.gbase = 2 + (unsigned)t->L * m->ts->layer_params;
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

static void
mg_transformer(mg_t *m)
{
	const msim_model_cfg_t *c = m->cfg;
	mg_tf_t t = {0};
	t.L = c->layers;
	t.fwd = calloc(t.L, sizeof(*t.fwd));
	t.bwd = calloc(t.L, sizeof(*t.bwd));
	if (!t.fwd || !t.bwd) {
		mg_fail(m, MSIM_ENOMEM, "out of host memory");
		goto out;
	}
	m->tf = &t;
	uint64_t H = m->H, F = m->F, Q = m->Q;
	bool bert = c->arch == MSIM_ARCH_BERT;
	/* parameters, in module order */
	mg_param(m, m->V * H);
	mg_param(m, m->P * H);
	if (bert) {
		mg_param(m, 2 * H);
		mg_param(m, H);
		mg_param(m, H);
	}
	for (uint64_t i = 0; i < t.L; i++) {
		if (bert) {
			uint64_t e[16] = {H * H, H, H * H, H, H * H, H, H * H,
					  H, H, H, H * F, F, F * H, H, H, H};
			for (int k = 0; k < 16; k++)
				mg_param(m, e[k]);
		} else {
			uint64_t e[12] = {H, H, H * Q, Q, H * H, H, H, H,
					  H * F, F, F * H, H};
			for (int k = 0; k < 12; k++)
				mg_param(m, e[k]);
		}
	}
	if (bert) {
		mg_param(m, H * H);
		mg_param(m, H);
	} else {
		mg_param(m, H);
		mg_param(m, H);
	}
	mg_params_alloc(m);
	for (uint64_t s = 0; s < c->steps && !m->err; s++) {
		m->T = c->seq[s % c->nseq];
		m->batch_id = mg_alloc(m, m->B * m->T * 8);
		if (bert || c->inference) {
			mg_tf_forward(m, &t, NULL);
			if (bert) {
				mg_tf_tail(m, &t);
			} else {
				/* no_grad decoder: layers kept nothing */
				mg_tf_free_all(m, &t);
				mg_free(m, &m->batch_id);
			}
			mg_tf_free_all(m, &t);
			continue;
		}
		mg_zero_grad(m);
		mg_tf_forward(m, &t, m->seg);
		/* a checkpointed model drops every layer's tensors but the
		 * segment outputs before the head */
		mg_tf_tail(m, &t);
		mg_tf_backward(m, &t, m->seg);
		mg_optimizer(m, s);
		int32_t *loss = mg_lookup(&t.tail, m->ts->loss,
					  strlen(m->ts->loss));
		mg_free(m, &m->batch_id);
		if (loss && *loss >= 0) {
			int64_t id = *loss;
			mg_free(m, &id);
			*loss = -1;
		}
		mg_tf_free_all(m, &t); /* nothing should be left; be safe */
	}
out:
	m->tf = NULL;
	free(t.fwd);
	free(t.bwd);
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

static void
rn_grad(mg_t *m, unsigned idx, uint64_t bytes_lowp)
{
	bool amp = m->cfg->dtype == MSIM_DT_BF16_AMP ||
		   m->cfg->dtype == MSIM_DT_FP16_AMP;
	int64_t lp = amp ? mg_alloc(m, bytes_lowp) : -1;
	int64_t g = mg_alloc(m, m->psize[idx]);
	mg_free(m, &lp);
	mg_free(m, &m->grad[idx]);
	m->grad[idx] = g;
}

/* bn + conv backward of c; dy is the gradient at the bn output (freed).
 * Returns the gradient at the conv input (or -1 for the stem). */
static int64_t
rn_conv_bwd(mg_t *m, rn_conv_t *c, int64_t dy, unsigned pidx, bool stem)
{
	uint64_t a = m->a, B = m->B;
	uint64_t ob = B * c->cout * c->hout * c->hout * a;
	int64_t dbn = mg_alloc(m, ob);
	mg_free(m, &m->grad[pidx + 1]);
	m->grad[pidx + 1] = mg_alloc(m, m->psize[pidx + 1]);
	mg_free(m, &m->grad[pidx + 2]);
	m->grad[pidx + 2] = mg_alloc(m, m->psize[pidx + 2]);
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
	for (uint64_t step = 0; step < c->steps && !m->err; step++) {
		int64_t x = mg_alloc(m, B * 3 * S * S * 4);
		int64_t y = mg_alloc(m, B * 8);
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
		mg_workspace(m, false);
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
		mg_workspace(m, true);
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
		mg_scaler_step(m, true);
		mg_optimizer(m, step);
		mg_scaler_step(m, false);
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
		cfg->kv_heads = 32, cfg->vocab = 32000;
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
	if (c->arch == MSIM_ARCH_BERT && c->dtype != MSIM_DT_FP32 &&
	    c->dtype != MSIM_DT_BF16)
		BAD("--dtype: bert inference is modelled in fp32 and bf16");
	if (c->ckpt.kind == MSIM_CKPT_EVERY && !c->ckpt.k)
		BAD("--checkpoint: every:K needs K >= 1");
	return 0;
#undef BAD
}

static int
mg_generate(const msim_model_cfg_t *c, msim_gen_t *g, const uint32_t *seg,
	    char *why, size_t whylen)
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
	bool amp = c->dtype == MSIM_DT_BF16_AMP || c->dtype == MSIM_DT_FP16_AMP;
	m.p = c->dtype == MSIM_DT_BF16 ? 2 : 4;
	m.a = (amp || c->dtype == MSIM_DT_BF16) ? 2 : 4;
	m.batch_id = -1;
	m.scaler[0] = m.scaler[1] = -1;
	m.found_inf = m.inv_scale = -1;
	m.psize = calloc(MG_MAXPARAM, sizeof(*m.psize));
	m.grad = malloc(MG_MAXPARAM * sizeof(*m.grad));
	m.state = malloc(2 * MG_MAXPARAM * sizeof(*m.state));
	if (!m.psize || !m.grad || !m.state) {
		mg_fail(&m, MSIM_ENOMEM, "out of host memory");
		goto out;
	}
	for (unsigned i = 0; i < MG_MAXPARAM; i++)
		m.grad[i] = m.state[2 * i] = m.state[2 * i + 1] = -1;
	if (c->arch == MSIM_ARCH_RESNET50) {
		mg_resnet50(&m);
	} else {
		m.ts = c->arch == MSIM_ARCH_BERT ? &msim_bert_infer
		       : amp ? &msim_gpt2_amp : &msim_gpt2_fp32;
		mg_transformer(&m);
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
