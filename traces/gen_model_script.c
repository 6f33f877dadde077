/*
 * The interpreter of the model generator's tensor scripts
 * (gen_model_scripts.h): expressions over the model's sizes, scopes of
 * named tensors (one a layer and phase), and the statements that
 * allocate, free and bind them.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "traces/gen_model_int.h"

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

int32_t *
mg_lookup(mg_scope_t *sc, const char *name, size_t len)
{
	if (!sc || len >= 8)
		return NULL;
	for (int i = sc->n; i-- > 0;)
		if (!strncmp(sc->names[i], name, len) && !sc->names[i][len])
			return &sc->ids[i];
	return NULL;
}

void
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

void
mg_scope_reset(mg_scope_t *sc)
{
	sc->n = 0;
	sc->recompute = false;
}

/* Frees every live tensor of sc except the one named keep (may be NULL). */
void
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
void
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
void
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
bool
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
void
mg_free_name(mg_t *m, mg_scope_t *sc, const char *name, size_t len)
{
	int32_t *slot = mg_lookup(sc, name, len);
	if (slot && *slot >= 0) {
		int64_t id = *slot;
		mg_free(m, &id);
		*slot = -1;
	}
}

void
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
