/*
 * bfc: TensorFlow's best-fit-with-coalescing allocator (BFCAllocator in
 * tensorflow/tsl/framework/bfc_allocator.cc, read for its rules, not
 * copied), as TensorFlow runs it on a GPU with allow_growth.
 *
 * - Sizes round up to 256 B (kMinAllocationSize).
 * - Free chunks sit in 21 bins of power-of-two sizes from 256 B, each
 *   ordered by (size, address); a lookup scans from the request's bin
 *   upwards and takes the first chunk that fits, which is the global best
 *   fit by (size, address), so one index ordered that way is the same.
 * - A chunk is split when it is at least twice the request, or when the
 *   remainder would be 128 MiB or more (max_internal_fragmentation).
 * - A freed chunk merges with free address neighbours of its region.
 * - When nothing fits, Extend(): with allow_growth the region size starts
 *   at 2 MiB and doubles until it holds the request; after a region of
 *   that size is obtained without having had to double, the next one is
 *   twice as large.  A region never exceeds what is left of memory_limit.
 *   Without allow_growth the first region is the whole memory_limit.
 * - If that fails, garbage collection (TF_ENABLE_GPU_GARBAGE_COLLECTION,
 *   on by default) frees every wholly free region and extends again.
 *   Regions are never released otherwise.  The one-time 0.9x "backpedal"
 *   retry on a failed cudaMalloc is modelled too.
 * - spatial_partitioning (XLA's enable_spatial_partitioning, which JAX's
 *   preallocated pool behaves as: docs/bfc.md §1 h): the region's untouched
 *   top is the central gap, outside the best-fit index; a request takes it
 *   (FindChunkPtrInCentralGap, split by the same rule) only when no free
 *   chunk fits, and a chunk freed just below it joins it
 *   (ReturnBoundaryChunkToGap).
 * - placement:jax places regions as the driver does in a JAX process
 *   (docs/bfc.md §2); the order of region addresses decides ties.
 *
 * memory_limit is TensorFlow's per-GPU limit: by default the device (or the
 * cap), as TensorFlow takes nearly all free memory.
 *
 * Cost: alloc and free are a binary search and a memmove over the free
 * chunks (kit.h).  Pathology: region doubling reserves up to twice the
 * peak (the last region is as large as all before it together), and
 * requests larger than half a region leave slivers between regions that
 * never coalesce.  Statistics: one pool, MSIM_POOL_LARGE.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/kit.h"
#include "sim/policy.h"
#include "sim/error.h"

#define BFC_MIN 256
#define BFC_INIT_GROWTH (2 * MSIM_MiB)

typedef struct bfc_region_s {
	msim_addr_t addr;
	uint64_t size;
	msim_ext_t *first;          /* lowest chunk */
	struct bfc_region_s *next;  /* in creation order */
} bfc_region_t;

typedef struct bfc_state_s {
	msim_device_t *dev;
	uint64_t limit;          /* memory_limit: bytes */
	uint64_t max_frag;       /* split when the rest is this large */
	bool gc;                 /* garbage_collection */
	uint64_t curr_region;    /* curr_region_allocation_bytes_ */
	uint64_t total_region;   /* total_region_allocated_bytes_ */
	bool backpedalled;       /* started_backpedal_ */
	bool spatial;            /* enable_spatial_partitioning */
	msim_ext_t *gap;         /* central_gap_: free, not indexed, or NULL */
	bfc_region_t *regions;
	msim_extidx_t free;
	msim_live_t live;
	msim_stats_t st;
} bfc_state_t;

enum { P_ALLOW_GROWTH, P_LIMIT_MB, P_FRAG_FRACTION, P_GC, P_PLACEMENT,
       P_SPATIAL };

static int
bfc_placement_check(const char *text, char *why, size_t whylen)
{
	if (strcmp(text, "pytorch") == 0 || strcmp(text, "jax") == 0)
		return 0;
	snprintf(why, whylen, "'%s' is not pytorch or jax", text);
	return MSIM_EINVAL;
}

static const msim_param_spec_t bfc_params[] = {
	[P_ALLOW_GROWTH] = {"allow_growth", MSIM_PT_BOOL, "True", 0, 0, 0,
		"grow regions from 2 MiB on demand (False: one region of "
		"memory_limit)", NULL},
	[P_LIMIT_MB] = {"memory_limit_mb", MSIM_PT_UINT, "none", 1, 1e9,
		MSIM_PF_NONE_OK, "TensorFlow's per-GPU memory limit (none: "
		"the device or the cap)", NULL},
	[P_FRAG_FRACTION] = {"fragmentation_fraction", MSIM_PT_DOUBLE, "0",
		0, 1, MSIM_PF_MAX_OPEN, "split when the rest is at least this "
		"fraction of memory_limit (0: 128 MiB)", NULL},
	[P_GC] = {"garbage_collection", MSIM_PT_BOOL, "True", 0, 0, 0,
		"free wholly free regions when an extension fails", NULL},
	[P_PLACEMENT] = {"placement", MSIM_PT_TEXT, "pytorch", 0, 0, 0,
		"where the driver puts regions: as in a pytorch process or a "
		"jax one (docs/bfc.md)", bfc_placement_check},
	[P_SPATIAL] = {"spatial_partitioning", MSIM_PT_BOOL, "False", 0, 0, 0,
		"XLA's central gap (needs allow_growth False): free chunks "
		"first, then the region's untouched top (docs/bfc.md)", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

static uint64_t
bfc_round(uint64_t n)
{
	return msim_ceil_to(n, BFC_MIN);
}

/* Extend(): a new region for a request of rounded bytes.  Returns 0,
 * MSIM_EDEVOOM or MSIM_ENOMEM. */
static int
bfc_extend(bfc_state_t *s, uint64_t rounded)
{
	uint64_t avail = (s->limit - s->total_region) / BFC_MIN * BFC_MIN;
	if (rounded > avail)
		return MSIM_EDEVOOM;
	bool increased = false;
	while (rounded > s->curr_region) {
		s->curr_region *= 2;
		increased = true;
	}
	uint64_t bytes = s->curr_region < avail ? s->curr_region : avail;
	msim_addr_t addr;
	int rc = msim_device_malloc(s->dev, bytes, MSIM_POOL_LARGE, &addr);
	if (rc && !s->backpedalled) {
		s->backpedalled = true;
		while (rc) {
			bytes = bfc_round((uint64_t)((double)bytes * 0.9));
			if (bytes < rounded)
				break;
			rc = msim_device_malloc(s->dev, bytes, MSIM_POOL_LARGE,
						&addr);
		}
	}
	if (rc)
		return MSIM_EDEVOOM;
	if (!increased)
		s->curr_region *= 2;
	bfc_region_t *r = calloc(1, sizeof(*r));
	msim_ext_t *c = r ? msim_ext_new(addr, bytes, r) : NULL;
	if (c && s->spatial && !s->gap) {
		s->gap = c;
	} else if (!c || msim_extidx_insert(&s->free, c)) {
		free(c);
		free(r);
		msim_device_free(s->dev, addr, bytes, MSIM_POOL_LARGE);
		return MSIM_ENOMEM;
	}
	r->addr = addr;
	r->size = bytes;
	r->first = c;
	r->next = s->regions;
	s->regions = r;
	s->total_region += bytes;
	return 0;
}

/* DeallocateFreeRegions(): frees every region with no chunk in use, if
 * that could make room for rounded bytes.  Returns whether it freed. */
static bool
bfc_free_regions(bfc_state_t *s, uint64_t rounded)
{
	if (!s->gc)
		return false;
	uint64_t free_bytes = 0;
	for (bfc_region_t *r = s->regions; r; r = r->next)
		if (!r->first->used && !r->first->next)
			free_bytes += r->size;
	if (free_bytes == 0 || rounded > s->limit - s->total_region + free_bytes)
		return false;
	for (bfc_region_t **pp = &s->regions; *pp;) {
		bfc_region_t *r = *pp;
		if (r->first->used || r->first->next) {
			pp = &r->next;
			continue;
		}
		if (r->first == s->gap)
			s->gap = NULL;
		else
			msim_extidx_remove(&s->free, r->first);
		free(r->first);
		msim_device_free(s->dev, r->addr, r->size, MSIM_POOL_LARGE);
		s->total_region -= r->size;
		*pp = r->next;
		free(r);
	}
	return true;
}

/* FindChunkPtr(): best fit, split by BFC's rule.  NULL if nothing fits;
 * *oom set when out of host memory. */
static msim_ext_t *
bfc_find(bfc_state_t *s, uint64_t rounded, bool *nomem)
{
	msim_ext_t *c = msim_extidx_best(&s->free, rounded);
	bool from_gap = false;
	if (c) {
		msim_extidx_remove(&s->free, c);
	} else if (s->gap && s->gap->size >= rounded) {
		/* FindChunkPtrInCentralGap: no free chunk fits. */
		c = s->gap;
		s->gap = NULL;
		from_gap = true;
	} else {
		return NULL;
	}
	if (c->size < 2 * rounded && c->size - rounded < s->max_frag)
		return c;
	if (from_gap) { /* the rest stays the gap */
		msim_ext_t *rest = msim_ext_split(c, rounded);
		if (!rest) {
			s->gap = c;
			*nomem = true;
			return NULL;
		}
		s->gap = rest;
		return c;
	}
	if (msim_extidx_split(&s->free, c, rounded)) {
		*nomem = true;
		return NULL;
	}
	return c;
}

static int
bfc_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	bfc_state_t *s = state;
	uint64_t rounded = bfc_round(req->size);
	bool nomem = false;
	if (msim_live_put(&s->live, req->id, NULL))
		return MSIM_ENOMEM;
	msim_ext_t *c = bfc_find(s, rounded, &nomem);
	if (!c && !nomem) {
		int rc = bfc_extend(s, rounded);
		if (rc == MSIM_ENOMEM)
			return rc;
		if (rc == 0)
			c = bfc_find(s, rounded, &nomem);
	}
	if (!c && !nomem && bfc_free_regions(s, rounded)) {
		int rc = bfc_extend(s, rounded);
		if (rc == MSIM_ENOMEM)
			return rc;
		if (rc == 0)
			c = bfc_find(s, rounded, &nomem);
	}
	if (nomem)
		return MSIM_ENOMEM;
	if (!c) {
		s->st.num_ooms++;
		msim_device_log_oom(s->dev, rounded);
		return MSIM_EDEVOOM;
	}
	*addr_out = msim_kit_hand_out(&s->live, &s->st, MSIM_POOL_LARGE, c,
				      req);
	return 0;
}

static int
bfc_free(void *state, const msim_req_t *req)
{
	bfc_state_t *s = state;
	msim_ext_t *c = msim_live_take(&s->live, req->id);
	if (!c)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, c->size, c->requested);
	c->used = false;
	bfc_region_t *r = c->owner;
	/* ReturnBoundaryChunkToGap: a chunk just below the gap (or at the
	 * region's end) joins it, with the free chunk below it. */
	bool to_gap = s->spatial && (c->next == NULL || c->next == s->gap);
	if (to_gap && s->gap && c->next != s->gap)
		to_gap = false; /* one gap only */
	c = msim_ext_coalesce(&s->free, c);
	if (!c->prev)
		r->first = c;
	if (to_gap) {
		s->gap = c;
		return 0;
	}
	return msim_extidx_insert(&s->free, c);
}

static void
bfc_stats(const void *state, msim_stats_t *out)
{
	*out = ((const bfc_state_t *)state)->st;
}

static void
bfc_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const bfc_state_t *s = state;
	const msim_ext_t *c = msim_extidx_largest(&s->free);
	*largest_out = c ? c->size : 0;
	*total_out = s->free.bytes;
	if (s->gap) { /* LargestFreeChunk() counts it */
		if (s->gap->size > *largest_out)
			*largest_out = s->gap->size;
		*total_out += s->gap->size;
	}
}

static void
bfc_destroy(void *state)
{
	bfc_state_t *s = state;
	if (!s)
		return;
	while (s->regions) {
		bfc_region_t *r = s->regions;
		for (msim_ext_t *c = r->first, *n; c; c = n) {
			n = c->next;
			free(c);
		}
		s->regions = r->next;
		free(r);
	}
	msim_extidx_clear(&s->free);
	msim_live_clear(&s->live);
	free(s);
}

static int
bfc_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	   char *why, size_t whylen)
{
	const msim_param_value_t *v = pv->v;
	bfc_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	uint64_t cap = msim_device_cap(dev);
	s->limit = v[P_LIMIT_MB].none ? (cap ? cap : msim_device_capacity(dev))
				      : v[P_LIMIT_MB].u * MSIM_MiB;
	s->max_frag = v[P_FRAG_FRACTION].d > 0.0
		? (uint64_t)(v[P_FRAG_FRACTION].d * (double)s->limit)
		: 128 * MSIM_MiB;
	s->gc = v[P_GC].b;
	/* Another backend (a fake, real cudaMalloc) keeps its own places. */
	if (strcmp(v[P_PLACEMENT].text, "jax") == 0 &&
	    msim_device_set_layout(dev, MSIM_LAYOUT_JAX) == MSIM_ENOMEM) {
		free(s);
		return MSIM_ENOMEM;
	}
	s->spatial = v[P_SPATIAL].b;
	if (s->spatial && v[P_ALLOW_GROWTH].b) {
		snprintf(why, whylen, "spatial_partitioning needs "
			 "allow_growth:False (one fixed region)");
		free(s);
		return MSIM_EINVAL;
	}
	uint64_t init = s->limit < BFC_INIT_GROWTH ? s->limit : BFC_INIT_GROWTH;
	s->curr_region = bfc_round(v[P_ALLOW_GROWTH].b ? init : s->limit);
	*state_out = s;
	return 0;
}

const msim_policy_ops_t msim_policy_bfc = {
	.name = "bfc",
	.summary = "TensorFlow's best-fit with coalescing (BFC), allow_growth",
	.params = bfc_params,
	.create = bfc_create,
	.alloc = bfc_alloc,
	.free = bfc_free,
	.stats = bfc_stats,
	.free_info = bfc_free_info,
	.destroy = bfc_destroy,
};
