/*
 * The statistical generator (gen_random.h).  An event loop over two
 * sources: the next arrival (exponential gaps) and the earliest pending
 * free (a binary min-heap of death times, ties in insertion order), so
 * requests come out in time order.  Cost O(n log live).
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "traces/gen_random.h"

void
msim_random_defaults(msim_random_cfg_t *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	cfg->requests = 10000;
	cfg->streams = 1;
	cfg->mu = 14;
	cfg->sigma = 2.5;
	cfg->lifetime_us = 200;
	cfg->arrival_us = 10;
}

int
msim_random_parse_sizes(msim_random_cfg_t *cfg, const char *spec, char *why,
			size_t whylen)
{
	char *end;
	if (!strncmp(spec, "lognormal:", 10)) {
		double mu = strtod(spec + 10, &end);
		if (*end != ':')
			goto bad;
		double sigma = strtod(end + 1, &end);
		if (*end || !(sigma >= 0) || !(mu > 0) || mu > 40)
			goto bad;
		cfg->sizes = 0;
		cfg->mu = mu;
		cfg->sigma = sigma;
		return 0;
	}
	if (!strncmp(spec, "classes:", 8)) {
		const char *s = spec + 8;
		cfg->nclass = 0;
		while (*s) {
			if (cfg->nclass == MSIM_RANDOM_MAXCLASS)
				goto bad;
			unsigned long long sz = strtoull(s, &end, 10);
			if (end == s || *end != '@' || !sz || *s == '-' ||
			    sz > MSIM_SIZE_MAX)
				goto bad;
			double w = strtod(end + 1, &end);
			if (!(w > 0) || (*end && *end != '/'))
				goto bad;
			cfg->class_size[cfg->nclass] = sz;
			cfg->class_weight[cfg->nclass++] = w;
			s = *end ? end + 1 : end;
		}
		if (!cfg->nclass)
			goto bad;
		cfg->sizes = 1;
		return 0;
	}
bad:
	snprintf(why, whylen, "--sizes: '%s' is not lognormal:MU:SIGMA "
		 "(0 < MU <= 40, SIGMA >= 0) or classes:SIZE@WEIGHT/...",
		 spec);
	return MSIM_EINVAL;
}

typedef struct rnd_death_s {
	double t;
	uint64_t seq;
	uint32_t id;
} rnd_death_t;

static bool
rnd_less(const rnd_death_t *a, const rnd_death_t *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void
rnd_push(rnd_death_t *h, size_t *n, rnd_death_t d)
{
	size_t i = (*n)++;
	h[i] = d;
	while (i && rnd_less(&h[i], &h[(i - 1) / 2])) {
		rnd_death_t t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static rnd_death_t
rnd_pop(rnd_death_t *h, size_t *n)
{
	rnd_death_t top = h[0];
	h[0] = h[--(*n)];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && rnd_less(&h[l], &h[m]))
			m = l;
		if (r < *n && rnd_less(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		rnd_death_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
	return top;
}

int
msim_random_generate(const msim_random_cfg_t *c, msim_gen_t *g, char *why,
		     size_t whylen)
{
	if (!c->requests || !c->streams || !(c->lifetime_us > 0) ||
	    !(c->arrival_us > 0)) {
		snprintf(why, whylen, "%s: must be positive",
			 !c->requests ? "--requests" : !c->streams ? "--streams"
			 : !(c->lifetime_us > 0) ? "--lifetime" : "--arrival");
		return MSIM_EINVAL;
	}
	uint64_t maxb = c->max_bytes ? c->max_bytes : (uint64_t)64 << 30;
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	/* The heap holds the live allocations only: it grows with them. */
	size_t cap = 1024;
	rnd_death_t *heap = malloc(cap * sizeof(*heap));
	gsl_ran_discrete_t *disc = NULL;
	int rc = 0;
	if (!r || !heap) {
		rc = MSIM_ENOMEM;
		goto out;
	}
	gsl_rng_set(r, (unsigned long)c->seed);
	if (c->sizes == 1) {
		disc = gsl_ran_discrete_preproc(c->nclass, c->class_weight);
		if (!disc) {
			rc = MSIM_ENOMEM;
			goto out;
		}
	}
	/* requests counts allocations and frees: half of each, and an odd
	 * count leaves the last allocation to die live. */
	uint64_t nalloc = (c->requests + 1) / 2, nfree = c->requests / 2;
	uint64_t freed = 0;
	size_t n = 0;
	double now = 0;
	for (uint64_t i = 0; i < nalloc; i++) {
		now += gsl_ran_exponential(r, c->arrival_us);
		while (n && heap[0].t <= now) {
			rnd_death_t d = rnd_pop(heap, &n);
			g->clock = (msim_time_t)(d.t * 1000);
			msim_gen_free(g, d.id);
			freed++;
		}
		uint64_t size;
		if (disc) {
			size = c->class_size[gsl_ran_discrete(r, disc)];
		} else {
			double b = exp(c->mu + gsl_ran_gaussian(r, c->sigma));
			size = b < 1 ? 1 : b > (double)maxb ? maxb
						: (uint64_t)b;
		}
		msim_stream_t st = c->streams > 1
				   ? gsl_rng_uniform_int(r, c->streams) : 0;
		g->clock = (msim_time_t)(now * 1000);
		int64_t id = msim_gen_alloc(g, size, st);
		if (id < 0) {
			rc = MSIM_ENOMEM;
			goto out;
		}
		double life = gsl_ran_exponential(r, c->lifetime_us);
		if (MSIM_GROW(heap, cap, n + 1, 1024)) {
			rc = MSIM_ENOMEM;
			goto out;
		}
		rnd_push(heap, &n, (rnd_death_t){now + life, i, (uint32_t)id});
	}
	while (n && freed < nfree) {
		freed++;
		rnd_death_t d = rnd_pop(heap, &n);
		g->clock = (msim_time_t)(d.t * 1000);
		msim_gen_free(g, d.id);
	}
out:
	gsl_ran_discrete_free(disc);
	free(heap);
	gsl_rng_free(r);
	if (rc == MSIM_ENOMEM)
		snprintf(why, whylen, "out of host memory");
	return rc;
}
