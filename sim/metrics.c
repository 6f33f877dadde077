/* Statistic names and the down-sampled timeline of metrics.h. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/error.h"
#include "sim/metrics.h"

static const char *const pool_names[MSIM_NPOOL] = {
	"all", "small_pool", "large_pool",
};

static void
stat_emit(const char *prefix, const msim_stat_t *s,
	  void (*fn)(const char *, int64_t, void *), void *ctx)
{
	char name[96];
	snprintf(name, sizeof(name), "%s.current", prefix);
	fn(name, s->current, ctx);
	snprintf(name, sizeof(name), "%s.peak", prefix);
	fn(name, s->peak, ctx);
	snprintf(name, sizeof(name), "%s.allocated", prefix);
	fn(name, s->allocated, ctx);
	snprintf(name, sizeof(name), "%s.freed", prefix);
	fn(name, s->freed, ctx);
}

void
msim_stats_foreach(const msim_stats_t *st,
		   void (*fn)(const char *name, int64_t value, void *ctx),
		   void *ctx)
{
	char prefix[64];
#define XX(field)                                                          \
	for (int p = 0; p < MSIM_NPOOL; p++) {                             \
		snprintf(prefix, sizeof(prefix), "%s.%s", #field,          \
			 pool_names[p]);                                   \
		stat_emit(prefix, &st->field[p], fn, ctx);                 \
	}
	MSIM_STAT_ARRAYS(XX)
#undef XX
#define XX(field) stat_emit(#field, &st->field, fn, ctx);
	MSIM_STAT_SINGLES(XX)
#undef XX
#define XX(field) fn(#field, st->field, ctx);
	MSIM_STAT_COUNTERS(XX)
#undef XX
	fn("max_split_size", st->max_split_size, ctx);
}

typedef struct get_ctx_s {
	const char *name;
	int64_t value;
	int found;
} get_ctx_t;

static void
get_one(const char *name, int64_t value, void *ctx)
{
	get_ctx_t *g = ctx;
	if (!g->found && !strcmp(name, g->name)) {
		g->value = value;
		g->found = 1;
	}
}

int
msim_stats_get(const msim_stats_t *st, const char *name, int64_t *value_out)
{
	get_ctx_t g = {.name = name};
	msim_stats_foreach(st, get_one, &g);
	if (!g.found)
		return MSIM_ENOTFOUND;
	*value_out = g.value;
	return 0;
}

int
msim_timeline_init(msim_timeline_t *tl, size_t max_points)
{
	memset(tl, 0, sizeof(*tl));
	tl->cap = 2 * (max_points ? max_points : 1);
	tl->stride = 1;
	tl->v = malloc(tl->cap * sizeof(*tl->v));
	return tl->v ? 0 : MSIM_ENOMEM;
}

void
msim_timeline_clear(msim_timeline_t *tl)
{
	free(tl->v);
	memset(tl, 0, sizeof(*tl));
}

void
msim_timeline_add(msim_timeline_t *tl, const msim_sample_t *s)
{
	if (tl->n && tl->v[tl->n - 1].request == s->request) {
		tl->v[tl->n - 1] = *s; /* the final state replaces a sample */
		return;
	}
	if (tl->n == tl->cap) {
		size_t k = 0;
		uint64_t stride = 2 * tl->stride;
		for (size_t i = 0; i < tl->n; i++)
			if (tl->v[i].request % stride == 0)
				tl->v[k++] = tl->v[i];
		tl->n = k;
		tl->stride = stride;
		if (tl->n == tl->cap)
			return; /* cannot happen: half the points go */
	}
	tl->v[tl->n++] = *s;
}

double
msim_frag(int64_t allocated, int64_t reserved)
{
	return reserved > 0 ? 1.0 - (double)allocated / (double)reserved : 0.0;
}

double
msim_ext_frag(uint64_t largest_free, uint64_t free)
{
	return free > 0 ? 1.0 - (double)largest_free / (double)free : 0.0;
}
