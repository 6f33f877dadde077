/*
 * pool: RAPIDS RMM's pool_memory_resource (rmm/mr/device/
 * pool_memory_resource.hpp and detail/coalescing_free_list.hpp): one pool
 * of upstream allocations, a coalescing free list, best fit.
 *
 * - Sizes round up to 256 B (rmm::CUDA_ALLOCATION_ALIGNMENT).
 * - The smallest free block that fits is taken (best fit; ties to the
 *   lowest address) and split exactly: the front is handed out, the rest
 *   stays free.
 * - A freed block merges with free neighbours of the same upstream
 *   allocation (RMM never merges across an upstream allocation's head).
 * - When nothing fits the pool grows by a new upstream allocation: with a
 *   maximum size, max(size, what is left / 2) (aligned), else max(size,
 *   the pool's current size), so the pool doubles; if the upstream refuses,
 *   RMM halves the attempt down to the size.  The pool starts with
 *   initial_pool_size_mb (0 here: grow on the first request; RMM's old
 *   default was half the free device memory).
 * - Memory goes back upstream only when the pool is destroyed.
 *
 * RMM keeps one free list per CUDA stream and steals from other streams
 * after synchronising; memsim's traces are served from one list, which is
 * what a single-stream program sees.
 *
 * Cost: binary search and memmove over the free blocks (kit.h).
 * Pathology: doubling growth reserves up to twice the peak, and the
 * pool never shrinks.  Statistics: one pool, MSIM_POOL_LARGE.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "policies/kit.h"
#include "sim/policy.h"
#include "sim/error.h"

#define PL_ALIGN 256

typedef struct pl_seg_s {
	msim_addr_t addr;
	uint64_t size;
	msim_ext_t *first;
	struct pl_seg_s *next;
} pl_seg_t;

typedef struct pl_state_s {
	msim_device_t *dev;
	uint64_t max;      /* maximum_pool_size: bytes, 0 = none */
	uint64_t pool;     /* bytes obtained upstream */
	pl_seg_t *segs;
	msim_extidx_t free;
	msim_live_t live;
	msim_stats_t st;
} pl_state_t;

enum { P_INITIAL_MB, P_MAXIMUM_MB };

static const msim_param_spec_t pl_params[] = {
	[P_INITIAL_MB] = {"initial_pool_size_mb", MSIM_PT_UINT, "0", 0, 1e9,
		0, "bytes taken from the device at start, in MiB", NULL},
	[P_MAXIMUM_MB] = {"maximum_pool_size_mb", MSIM_PT_UINT, "none", 1,
		1e9, MSIM_PF_NONE_OK, "the pool never grows past this (none: "
		"until the device is full)", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

/* One upstream allocation of size bytes into the pool.  Returns 0,
 * MSIM_EDEVOOM or MSIM_ENOMEM. */
static int
pl_add(pl_state_t *s, uint64_t size)
{
	msim_addr_t addr;
	if (msim_device_malloc(s->dev, size, MSIM_POOL_LARGE, &addr))
		return MSIM_EDEVOOM;
	pl_seg_t *g = calloc(1, sizeof(*g));
	msim_ext_t *e = g ? msim_ext_new(addr, size, g) : NULL;
	if (!e || msim_extidx_insert(&s->free, e)) {
		free(e);
		free(g);
		msim_device_free(s->dev, addr, size, MSIM_POOL_LARGE);
		return MSIM_ENOMEM;
	}
	g->addr = addr;
	g->size = size;
	g->first = e;
	g->next = s->segs;
	s->segs = g;
	s->pool += size;
	return 0;
}

/* size_to_grow() and try_to_expand(). */
static int
pl_grow(pl_state_t *s, uint64_t size)
{
	uint64_t try_size;
	if (s->max) {
		if (s->pool >= s->max)
			return MSIM_EDEVOOM;
		uint64_t remaining = msim_ceil_to(s->max - s->pool, PL_ALIGN);
		if (size > remaining)
			return MSIM_EDEVOOM;
		try_size = size > remaining / 2 ? size : remaining / 2;
	} else {
		try_size = size > s->pool ? size : s->pool;
	}
	for (;;) {
		int rc = pl_add(s, try_size);
		if (rc != MSIM_EDEVOOM || try_size == size)
			return rc;
		try_size = try_size / 2 > size ? try_size / 2 : size;
	}
}

static int
pl_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	pl_state_t *s = state;
	uint64_t size = msim_ceil_to(req->size, PL_ALIGN);
	if (msim_live_put(&s->live, req->id, NULL))
		return MSIM_ENOMEM;
	msim_ext_t *b = msim_extidx_best(&s->free, size);
	if (!b) {
		int rc = pl_grow(s, size);
		if (rc == MSIM_EDEVOOM) {
			s->st.num_ooms++;
			msim_device_log_oom(s->dev, size);
		}
		if (rc)
			return rc;
		b = msim_extidx_best(&s->free, size);
	}
	msim_extidx_remove(&s->free, b);
	if (b->size > size && msim_extidx_split(&s->free, b, size))
		return MSIM_ENOMEM;
	*addr_out = msim_kit_hand_out(&s->live, &s->st, MSIM_POOL_LARGE, b,
				      req);
	return 0;
}

static int
pl_free(void *state, const msim_req_t *req)
{
	pl_state_t *s = state;
	msim_ext_t *b = msim_live_take(&s->live, req->id);
	if (!b)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	b->used = false;
	pl_seg_t *g = b->owner;
	b = msim_ext_coalesce(&s->free, b);
	if (!b->prev)
		g->first = b;
	return msim_extidx_insert(&s->free, b);
}

static void
pl_stats(const void *state, msim_stats_t *out)
{
	*out = ((const pl_state_t *)state)->st;
}

static void
pl_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const pl_state_t *s = state;
	const msim_ext_t *e = msim_extidx_largest(&s->free);
	*largest_out = e ? e->size : 0;
	*total_out = s->free.bytes;
}

static void
pl_destroy(void *state)
{
	pl_state_t *s = state;
	if (!s)
		return;
	while (s->segs) {
		pl_seg_t *g = s->segs;
		for (msim_ext_t *e = g->first, *n; e; e = n) {
			n = e->next;
			free(e);
		}
		s->segs = g->next;
		free(g);
	}
	msim_extidx_clear(&s->free);
	msim_live_clear(&s->live);
	free(s);
}

static int
pl_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	  char *why, size_t whylen)
{
	const msim_param_value_t *v = pv->v;
	uint64_t initial = v[P_INITIAL_MB].u * MSIM_MiB;
	uint64_t max = v[P_MAXIMUM_MB].none ? 0 : v[P_MAXIMUM_MB].u * MSIM_MiB;
	if (max && initial > max) {
		snprintf(why, whylen, "initial_pool_size_mb is above "
			 "maximum_pool_size_mb");
		return MSIM_EINVAL;
	}
	pl_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	s->max = max;
	int rc = initial ? pl_add(s, initial) : 0;
	if (rc) {
		snprintf(why, whylen, "initial_pool_size_mb: %s",
			 msim_strerror(rc));
		pl_destroy(s);
		return rc == MSIM_EDEVOOM ? MSIM_EINVAL : rc;
	}
	*state_out = s;
	return 0;
}

const msim_policy_ops_t msim_policy_pool = {
	.name = "pool",
	.summary = "RAPIDS RMM pool_memory_resource: coalescing best fit over "
		   "one growing pool",
	.params = pl_params,
	.create = pl_create,
	.alloc = pl_alloc,
	.free = pl_free,
	.stats = pl_stats,
	.free_info = pl_free_info,
	.destroy = pl_destroy,
};
