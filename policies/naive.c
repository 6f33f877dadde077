/*
 * naive: no allocator at all.  Every request is its own cudaMalloc, and
 * every free its own cudaFree, as a program calling the CUDA runtime
 * directly would do (or PYTORCH_NO_CUDA_MEMORY_CACHING=1).  The driver
 * backs an allocation with 2 MiB pages, so a segment is the request rounded
 * up to 2 MiB; the block handed out is the request rounded up to 512 B, and
 * the rest of the segment is waste that shows as fragmentation.
 *
 * The baseline of `memsim compare`: the least memory a caching allocator
 * could hope for on large tensors and the most device calls (two per
 * request, each 35 to 50 us on an H200, far more for GiB-sized ones).
 * Pathology: many small tensors, each paying a whole 2 MiB page.
 *
 * Cost: O(1) per request.  Statistics: one pool, MSIM_POOL_LARGE.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "policies/kit.h"
#include "sim/policy.h"
#include "sim/error.h"

#define NV_PAGE (2 * MSIM_MiB)
#define NV_ROUND 512

typedef struct nv_block_s {
	msim_addr_t addr;
	uint64_t seg;       /* bytes of the segment */
	uint64_t size;      /* bytes of the block */
	uint64_t requested; /* bytes asked for */
} nv_block_t;

typedef struct nv_state_s {
	msim_device_t *dev;
	uint64_t page;
	msim_live_t live;
	uint64_t free_bytes; /* unusable tails of segments */
	msim_stats_t st;
} nv_state_t;

enum { P_PAGE_KB };

static const msim_param_spec_t nv_params[] = {
	[P_PAGE_KB] = {"page_size_kb", MSIM_PT_UINT, "2048", 1, 1048576,
		MSIM_PF_POW2, "the driver's allocation granularity", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

static int
nv_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	  char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	nv_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	s->page = pv->v[P_PAGE_KB].u * 1024;
	*state_out = s;
	return 0;
}

static int
nv_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	nv_state_t *s = state;
	nv_block_t *b = malloc(sizeof(*b));
	if (!b || msim_live_put(&s->live, req->id, NULL)) {
		free(b);
		return MSIM_ENOMEM;
	}
	b->size = msim_ceil_to(req->size, NV_ROUND);
	b->seg = msim_ceil_to(b->size, s->page);
	b->requested = req->size;
	if (msim_device_malloc(s->dev, b->seg, MSIM_POOL_LARGE, &b->addr)) {
		s->st.num_ooms++;
		msim_device_log_oom(s->dev, b->seg);
		free(b);
		return MSIM_EDEVOOM;
	}
	s->live.v[req->id] = b;
	s->free_bytes += b->seg - b->size;
	msim_kit_count_alloc(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	*addr_out = b->addr;
	return 0;
}

static int
nv_free(void *state, const msim_req_t *req)
{
	nv_state_t *s = state;
	nv_block_t *b = msim_live_take(&s->live, req->id);
	if (!b)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	s->free_bytes -= b->seg - b->size;
	msim_device_free(s->dev, b->addr, b->seg, MSIM_POOL_LARGE);
	free(b);
	return 0;
}

static void
nv_stats(const void *state, msim_stats_t *out)
{
	*out = ((const nv_state_t *)state)->st;
}

/* The tails of segments cannot serve anyone: free, but in pieces. */
static void
nv_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const nv_state_t *s = state;
	uint64_t largest = 0;
	for (size_t i = 0; i < s->live.n; i++) {
		const nv_block_t *b = s->live.v[i];
		if (b && b->seg - b->size > largest)
			largest = b->seg - b->size;
	}
	*largest_out = largest;
	*total_out = s->free_bytes;
}

static void
nv_destroy(void *state)
{
	nv_state_t *s = state;
	if (!s)
		return;
	for (size_t i = 0; i < s->live.n; i++)
		free(s->live.v[i]);
	msim_live_clear(&s->live);
	free(s);
}

const msim_policy_ops_t msim_policy_naive = {
	.name = "naive",
	.summary = "no caching: one cudaMalloc/cudaFree per request, 2 MiB "
		   "pages (baseline)",
	.params = nv_params,
	.create = nv_create,
	.alloc = nv_alloc,
	.free = nv_free,
	.stats = nv_stats,
	.free_info = nv_free_info,
	.destroy = nv_destroy,
};
