/*
 * Metrics: the names of every statistic (those of torch.cuda.memory_stats()),
 * and the down-sampled timeline behind fragmentation curves.
 */
#ifndef MSIM_SIM_METRICS_H
#define MSIM_SIM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/types.h"

/* Calls fn(name, value, ctx) for each of the 122 memory_stats keys of
 * PyTorch 2.11, in a fixed order ("allocation.all.current", ...). */
void msim_stats_foreach(const msim_stats_t *st,
			void (*fn)(const char *name, int64_t value, void *ctx),
			void *ctx);

/* The value of one memory_stats key.  Returns 0 or MSIM_ENOTFOUND. */
int msim_stats_get(const msim_stats_t *st, const char *name,
		   int64_t *value_out);

/* One point of a curve. */
typedef struct msim_sample_s {
	uint64_t request;       /* requests served before this point */
	msim_time_t time;       /* simulated ns */
	int64_t allocated;      /* allocated_bytes.all.current */
	int64_t reserved;       /* reserved_bytes.all.current */
	int64_t active;         /* active_bytes.all.current */
	int64_t requested;      /* requested_bytes.all.current */
	uint64_t largest_free;  /* largest free block the policy holds */
	uint64_t free;          /* bytes of free blocks the policy holds */
} msim_sample_t;

/*
 * A timeline of at most 2 x max_points samples at every stride-th request;
 * when full, every other sample is dropped and the stride doubles, so the
 * memory is bounded whatever the trace length.
 */
typedef struct msim_timeline_s {
	msim_sample_t *v;
	size_t n, cap;
	uint64_t stride;
} msim_timeline_t;

/* Returns 0 or MSIM_ENOMEM. */
int msim_timeline_init(msim_timeline_t *tl, size_t max_points);
void msim_timeline_clear(msim_timeline_t *tl);

/* Whether the request-th request should be sampled. */
static inline int
msim_timeline_due(const msim_timeline_t *tl, uint64_t request)
{
	return request % tl->stride == 0;
}

/* Appends s (s->request increasing). */
void msim_timeline_add(msim_timeline_t *tl, const msim_sample_t *s);

/* 1 - allocated/reserved, 0 when nothing is reserved. */
double msim_frag(int64_t allocated, int64_t reserved);

/* 1 - largest free block / free bytes, 0 when nothing is free. */
double msim_ext_frag(uint64_t largest_free, uint64_t free);

#endif
