/*
 * binning: RAPIDS RMM's binning_memory_resource over fixed_size_memory_
 * resource bins (rmm/mr/device/binning_memory_resource.hpp): fixed size
 * classes over an upstream.
 *
 * - Bins are the powers of two from 2^min_size_exponent to
 *   2^max_size_exponent bytes (RMM's add_bin for each).  A request goes to
 *   the smallest bin that holds it and gets a block of exactly the bin's
 *   size.
 * - A bin with no free block takes a chunk of blocks_per_chunk blocks from
 *   the upstream (RMM: 128 blocks to preallocate) and keeps it for ever;
 *   its free blocks are a LIFO stack, lowest address first on a new chunk.
 * - Requests above the largest bin go to the upstream itself: here the
 *   device, one cudaMalloc per request at the driver's 2 MiB granularity
 *   (cuda_memory_resource), freed at once.
 *
 * Cost: O(1) per request.  Pathology: the power-of-two rounding wastes up
 * to half of each block, and a bin's first block of a size costs a whole
 * chunk (128 x 4 MiB = 512 MiB for the default largest bin); memory of a
 * bin never serves another bin.  Statistics: one pool, MSIM_POOL_LARGE;
 * allocated bytes are the bin size (or the request rounded to 256 B above
 * the bins).
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "policies/kit.h"
#include "sim/grow.h"
#include "sim/policy.h"
#include "sim/error.h"

#define BN_PAGE (2 * MSIM_MiB)
#define BN_ALIGN 256

typedef struct bn_bin_s {
	uint64_t size;        /* bytes of a block */
	msim_addr_t *stack;   /* free blocks, top at the end */
	size_t n, cap;
} bn_bin_t;

typedef struct bn_block_s {
	msim_addr_t addr;
	uint64_t size;      /* bytes handed out */
	uint64_t seg;       /* upstream segment bytes; 0 in a bin */
	uint64_t requested;
	int bin;            /* -1 above the bins */
} bn_block_t;

typedef struct bn_state_s {
	msim_device_t *dev;
	unsigned min_exp, max_exp;
	uint64_t per_chunk;
	bn_bin_t bins[64];
	msim_live_t live;
	uint64_t bin_free;  /* bytes of free blocks in bins */
	uint64_t tails;     /* unusable tails of upstream segments */
	msim_stats_t st;
} bn_state_t;

enum { P_MIN_EXP, P_MAX_EXP, P_PER_CHUNK };

static const msim_param_spec_t bn_params[] = {
	[P_MIN_EXP] = {"min_size_exponent", MSIM_PT_UINT, "9", 8, 30, 0,
		"smallest bin: 2^this bytes", NULL},
	[P_MAX_EXP] = {"max_size_exponent", MSIM_PT_UINT, "22", 8, 34, 0,
		"largest bin: 2^this bytes; larger requests go upstream",
		NULL},
	[P_PER_CHUNK] = {"blocks_per_chunk", MSIM_PT_UINT, "128", 1, 65536,
		0, "blocks a bin takes from upstream at once", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

static int
bn_push(bn_bin_t *bin, msim_addr_t a)
{
	if (MSIM_GROW(bin->stack, bin->cap, bin->n + 1, 128))
		return MSIM_ENOMEM;
	bin->stack[bin->n++] = a;
	return 0;
}

/* A new chunk for bin.  Returns 0, MSIM_EDEVOOM or MSIM_ENOMEM. */
static int
bn_refill(bn_state_t *s, bn_bin_t *bin)
{
	uint64_t bytes = bin->size * s->per_chunk;
	msim_addr_t base;
	if (bin->cap < s->per_chunk) {
		msim_addr_t *v = realloc(bin->stack,
					 s->per_chunk * sizeof(*v));
		if (!v)
			return MSIM_ENOMEM;
		bin->stack = v;
		bin->cap = s->per_chunk;
	}
	if (msim_device_malloc(s->dev, bytes, MSIM_POOL_LARGE, &base))
		return MSIM_EDEVOOM;
	for (uint64_t i = s->per_chunk; i-- > 0;)
		bin->stack[bin->n++] = base + i * bin->size;
	s->bin_free += bytes;
	return 0;
}

static int
bn_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	bn_state_t *s = state;
	bn_block_t *b = malloc(sizeof(*b));
	if (!b || msim_live_put(&s->live, req->id, NULL)) {
		free(b);
		return MSIM_ENOMEM;
	}
	b->requested = req->size;
	uint64_t want = req->size < (UINT64_C(1) << s->min_exp)
		? UINT64_C(1) << s->min_exp : req->size;
	unsigned e = msim_log2_floor(msim_pow2_ceil(want));
	int rc;
	if (e <= s->max_exp) {
		bn_bin_t *bin = &s->bins[e];
		if (bin->n == 0 && (rc = bn_refill(s, bin)))
			goto fail;
		b->addr = bin->stack[--bin->n];
		b->size = bin->size;
		b->seg = 0;
		b->bin = (int)e;
		s->bin_free -= bin->size;
	} else {
		b->size = msim_ceil_to(req->size, BN_ALIGN);
		b->seg = msim_ceil_to(b->size, BN_PAGE);
		b->bin = -1;
		if (msim_device_malloc(s->dev, b->seg, MSIM_POOL_LARGE,
				       &b->addr)) {
			rc = MSIM_EDEVOOM;
			goto fail;
		}
		s->tails += b->seg - b->size;
	}
	s->live.v[req->id] = b;
	msim_kit_count_alloc(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	*addr_out = b->addr;
	return 0;
fail:
	if (rc == MSIM_EDEVOOM) {
		s->st.num_ooms++;
		msim_device_log_oom(s->dev, req->size);
	}
	free(b);
	return rc;
}

static int
bn_free(void *state, const msim_req_t *req)
{
	bn_state_t *s = state;
	bn_block_t *b = msim_live_take(&s->live, req->id);
	if (!b)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, b->size, b->requested);
	int rc = 0;
	if (b->bin >= 0) {
		rc = bn_push(&s->bins[b->bin], b->addr);
		s->bin_free += b->size;
	} else {
		s->tails -= b->seg - b->size;
		msim_device_free(s->dev, b->addr, b->seg, MSIM_POOL_LARGE);
	}
	free(b);
	return rc;
}

static void
bn_stats(const void *state, msim_stats_t *out)
{
	*out = ((const bn_state_t *)state)->st;
}

/* A free block serves only its own bin, so the largest free block is the
 * largest bin with one (tails of upstream segments are counted as free
 * bytes but never as the largest block). */
static void
bn_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const bn_state_t *s = state;
	uint64_t largest = 0;
	for (unsigned e = s->min_exp; e <= s->max_exp; e++)
		if (s->bins[e].n)
			largest = s->bins[e].size;
	*largest_out = largest;
	*total_out = s->bin_free + s->tails;
}

static void
bn_destroy(void *state)
{
	bn_state_t *s = state;
	if (!s)
		return;
	for (size_t i = 0; i < s->live.n; i++)
		free(s->live.v[i]);
	msim_live_clear(&s->live);
	for (int e = 0; e < 64; e++)
		free(s->bins[e].stack);
	free(s);
}

static int
bn_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	  char *why, size_t whylen)
{
	const msim_param_value_t *v = pv->v;
	if (v[P_MIN_EXP].u > v[P_MAX_EXP].u) {
		snprintf(why, whylen, "min_size_exponent is above "
			 "max_size_exponent");
		return MSIM_EINVAL;
	}
	bn_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	s->min_exp = (unsigned)v[P_MIN_EXP].u;
	s->max_exp = (unsigned)v[P_MAX_EXP].u;
	s->per_chunk = v[P_PER_CHUNK].u;
	for (unsigned e = s->min_exp; e <= s->max_exp; e++)
		s->bins[e].size = UINT64_C(1) << e;
	*state_out = s;
	return 0;
}

const msim_policy_ops_t msim_policy_binning = {
	.name = "binning",
	.summary = "RAPIDS RMM binning_memory_resource: power-of-two fixed-size "
		   "bins over the device",
	.params = bn_params,
	.create = bn_create,
	.alloc = bn_alloc,
	.free = bn_free,
	.stats = bn_stats,
	.free_info = bn_free_info,
	.destroy = bn_destroy,
};
