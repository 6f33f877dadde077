/*
 * cuda-async: CUDA's stream-ordered allocator (cudaMallocAsync and
 * cudaFreeAsync from the device's default cudaMemPool_t), as PyTorch's
 * backend:cudaMallocAsync uses it: every request is a cudaMallocAsync of
 * its exact size, every free a cudaFreeAsync, and the pool's release
 * threshold is UINT64_MAX, so it keeps what it reserved
 * (docs/pytorch-allocator.md §12).
 *
 * The driver's pool is closed source; this is a model fitted to what it
 * did on an H200 (groundtruth async.tsv: reserved peaks, all multiples of
 * 32 MiB), not a reading of its code:
 *
 * - Blocks live in one large virtual range, placed first fit by address
 *   with coalescing.  Requests of 8 MiB or more are aligned and rounded to
 *   2 MiB (the driver's large-page size), smaller ones to 512 B.
 * - Physical memory is mapped in 32 MiB granules.  A granule is needed
 *   while any live block touches it; the pool holds as many physical
 *   granules as were ever needed at once, remapping a free one where a new
 *   block needs it (no driver call), mapping more only when none is free.
 * - Above the release threshold, free granules are unmapped when a block
 *   is freed (the driver trims at synchronisation, which traces do not
 *   show); empty_cache trims to zero (cudaMemPoolTrimTo(0)).
 *
 * On the four single-stream workloads of async.tsv the peaks come out
 * within one to two granules of the real ones (tests/check_policy_
 * cuda_async.c holds the figures).  Streams are ignored: a block freed on
 * one stream is reused at once by any, as with event-dependency reuse.
 *
 * Statistics as PyTorch reports this backend: allocated and active bytes
 * are the exact bytes asked for (so is requested_bytes here); one pool,
 * MSIM_POOL_LARGE.  Cost: first fit is a scan of the free ranges in
 * address order, O(ranges) per request.  Pathology: a long-lived block
 * pins every granule it touches, and the 2 MiB rounding of large blocks.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/kit.h"
#include "sim/policy.h"
#include "sim/error.h"

#define CA_VA_BASE UINT64_C(0x700000000000) /* the pool's virtual range */
#define CA_VA_SIZE (UINT64_C(1) << 44)

typedef struct ca_range_s {
	msim_addr_t addr;
	uint64_t size;
} ca_range_t;

typedef struct ca_block_s {
	msim_addr_t addr;
	uint64_t size;      /* bytes occupied (rounded) */
	uint64_t requested; /* bytes asked for */
} ca_block_t;

typedef struct ca_state_s {
	msim_device_t *dev;
	/* configuration */
	uint64_t granule;    /* bytes */
	uint64_t threshold;  /* release threshold, bytes */
	uint64_t align;      /* small blocks */
	uint64_t large_align;
	uint64_t large_min;  /* blocks this large use large_align */
	/* state */
	ca_range_t *free;    /* sorted by address, coalesced */
	size_t nfree, capfree;
	uint32_t *gref;      /* live blocks touching each granule */
	size_t ngref;
	uint64_t touched;    /* granules with gref > 0 */
	uint64_t phys;       /* granules mapped */
	msim_live_t live;
	msim_stats_t st;
} ca_state_t;

enum { P_THRESHOLD, P_GRANULE, P_ALIGN, P_LARGE_ALIGN, P_LARGE_MIN };

static const msim_param_spec_t ca_params[] = {
	[P_THRESHOLD] = {"release_threshold_mb", MSIM_PT_UINT, "none", 0, 1e9,
		MSIM_PF_NONE_OK, "cudaMemPoolAttrReleaseThreshold (none: "
		"UINT64_MAX, keep everything, as PyTorch sets it)", NULL},
	[P_GRANULE] = {"granule_mb", MSIM_PT_UINT, "32", 1, 1024,
		MSIM_PF_POW2, "physical mapping granularity", NULL},
	[P_ALIGN] = {"alignment", MSIM_PT_UINT, "512", 256, 1048576,
		MSIM_PF_POW2, "alignment and rounding of small blocks, bytes",
		NULL},
	[P_LARGE_ALIGN] = {"large_alignment_kb", MSIM_PT_UINT, "2048", 1,
		1048576, MSIM_PF_POW2, "alignment and rounding of large "
		"blocks", NULL},
	[P_LARGE_MIN] = {"large_min_kb", MSIM_PT_UINT, "8192", 1, 1e9, 0,
		"blocks of at least this size are large", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

/* Room for k more free ranges.  Returns 0 or MSIM_ENOMEM. */
static int
ca_reserve(ca_state_t *s, size_t k)
{
	if (s->nfree + k <= s->capfree)
		return 0;
	size_t cap = s->capfree ? 2 * s->capfree : 64;
	ca_range_t *v = realloc(s->free, cap * sizeof(*v));
	if (!v)
		return MSIM_ENOMEM;
	s->free = v;
	s->capfree = cap;
	return 0;
}

static int
ca_range_insert(ca_state_t *s, size_t at, msim_addr_t addr, uint64_t size)
{
	if (ca_reserve(s, 1))
		return MSIM_ENOMEM;
	memmove(&s->free[at + 1], &s->free[at],
		(s->nfree - at) * sizeof(*s->free));
	s->free[at] = (ca_range_t){addr, size};
	s->nfree++;
	return 0;
}

static void
ca_range_remove(ca_state_t *s, size_t at)
{
	memmove(&s->free[at], &s->free[at + 1],
		(s->nfree - at - 1) * sizeof(*s->free));
	s->nfree--;
}

/* Makes the granule table cover granule index g.  Returns 0 or ENOMEM. */
static int
ca_gref_cover(ca_state_t *s, uint64_t g)
{
	if (g < s->ngref)
		return 0;
	size_t n = s->ngref ? s->ngref : 256;
	while (n <= g)
		n *= 2;
	uint32_t *v = realloc(s->gref, n * sizeof(*v));
	if (!v)
		return MSIM_ENOMEM;
	memset(v + s->ngref, 0, (n - s->ngref) * sizeof(*v));
	s->gref = v;
	s->ngref = n;
	return 0;
}

/* Unmaps free physical granules down to keep granules. */
static void
ca_trim(ca_state_t *s, uint64_t keep)
{
	if (keep < s->touched)
		keep = s->touched;
	if (s->phys > keep) {
		msim_device_unmap(s->dev, CA_VA_BASE, (s->phys - keep) *
				  s->granule, MSIM_POOL_LARGE);
		s->phys = keep;
	}
}

static int
ca_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	ca_state_t *s = state;
	uint64_t a = req->size >= s->large_min ? s->large_align : s->align;
	uint64_t n = msim_ceil_to(req->size, a);
	ca_block_t *b = malloc(sizeof(*b));
	if (!b || msim_live_put(&s->live, req->id, NULL) || ca_reserve(s, 2)) {
		free(b);
		return MSIM_ENOMEM;
	}
	/* Larger than the device: no need to look (nor to grow the granule
	 * table over it). */
	if (n > msim_device_capacity(s->dev)) {
		free(b);
		goto oom;
	}
	/* First fit by address. */
	size_t i;
	msim_addr_t at = 0;
	for (i = 0; i < s->nfree; i++) {
		at = msim_ceil_to(s->free[i].addr, a);
		if (at + n <= s->free[i].addr + s->free[i].size)
			break;
	}
	if (i == s->nfree) {
		free(b);
		goto oom;
	}
	uint64_t g0 = (at - CA_VA_BASE) / s->granule;
	uint64_t g1 = (at + n - 1 - CA_VA_BASE) / s->granule;
	if (ca_gref_cover(s, g1)) {
		free(b);
		return MSIM_ENOMEM;
	}
	uint64_t fresh = 0;
	for (uint64_t g = g0; g <= g1; g++)
		fresh += s->gref[g] == 0;
	if (s->touched + fresh > s->phys) {
		uint64_t more = s->touched + fresh - s->phys;
		if (msim_device_map(s->dev, CA_VA_BASE + g0 * s->granule,
				    more * s->granule, MSIM_POOL_LARGE)) {
			free(b);
			goto oom;
		}
		s->phys += more;
	}
	for (uint64_t g = g0; g <= g1; g++)
		s->gref[g]++;
	s->touched += fresh;
	/* Carve [at, at + n) out of free range i. */
	ca_range_t r = s->free[i];
	ca_range_remove(s, i);
	if (r.addr + r.size > at + n)
		ca_range_insert(s, i, at + n, r.addr + r.size - at - n);
	if (at > r.addr)
		ca_range_insert(s, i, r.addr, at - r.addr);
	*b = (ca_block_t){at, n, req->size};
	s->live.v[req->id] = b;
	msim_kit_count_alloc(&s->st, MSIM_POOL_LARGE, req->size, req->size);
	*addr_out = at;
	return 0;
oom:
	s->st.num_ooms++;
	msim_device_log_oom(s->dev, n);
	return MSIM_EDEVOOM;
}

static int
ca_free(void *state, const msim_req_t *req)
{
	ca_state_t *s = state;
	ca_block_t *b = msim_live_take(&s->live, req->id);
	if (!b)
		return MSIM_ENOTFOUND;
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, b->requested,
			    b->requested);
	uint64_t g0 = (b->addr - CA_VA_BASE) / s->granule;
	uint64_t g1 = (b->addr + b->size - 1 - CA_VA_BASE) / s->granule;
	for (uint64_t g = g0; g <= g1; g++)
		if (--s->gref[g] == 0)
			s->touched--;
	/* Back into the free ranges, merged with its neighbours. */
	size_t lo = 0, hi = s->nfree;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->free[mid].addr < b->addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	bool left = lo > 0 &&
		s->free[lo - 1].addr + s->free[lo - 1].size == b->addr;
	bool right = lo < s->nfree && b->addr + b->size == s->free[lo].addr;
	int rc = 0;
	if (left && right) {
		s->free[lo - 1].size += b->size + s->free[lo].size;
		ca_range_remove(s, lo);
	} else if (left) {
		s->free[lo - 1].size += b->size;
	} else if (right) {
		s->free[lo].addr = b->addr;
		s->free[lo].size += b->size;
	} else {
		rc = ca_range_insert(s, lo, b->addr, b->size);
	}
	free(b);
	if (s->threshold != UINT64_MAX && s->phys * s->granule > s->threshold)
		ca_trim(s, s->threshold / s->granule);
	return rc;
}

static int
ca_empty_cache(void *state)
{
	ca_trim(state, 0);
	return 0;
}

static void
ca_stats(const void *state, msim_stats_t *out)
{
	*out = ((const ca_state_t *)state)->st;
}

/* Free space inside the mapped granules: (phys - touched) whole granules
 * plus the free parts of touched ones.  The largest free block is
 * approximated by the largest free range clipped to the mapped bytes. */
static void
ca_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const ca_state_t *s = state;
	uint64_t reserved = s->phys * s->granule;
	uint64_t used = 0;
	for (size_t i = 0; i < s->live.n; i++) {
		const ca_block_t *b = s->live.v[i];
		if (b)
			used += b->size;
	}
	uint64_t total = reserved > used ? reserved - used : 0;
	uint64_t largest = 0;
	for (size_t i = 0; i < s->nfree; i++)
		if (s->free[i].size > largest)
			largest = s->free[i].size;
	*largest_out = largest < total ? largest : total;
	*total_out = total;
}

static void
ca_destroy(void *state)
{
	ca_state_t *s = state;
	if (!s)
		return;
	for (size_t i = 0; i < s->live.n; i++)
		free(s->live.v[i]);
	msim_live_clear(&s->live);
	free(s->free);
	free(s->gref);
	free(s);
}

static int
ca_create(void **state_out, msim_device_t *dev, const msim_params_t *pv,
	  char *why, size_t whylen)
{
	(void)why;
	(void)whylen;
	const msim_param_value_t *v = pv->v;
	ca_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return MSIM_ENOMEM;
	s->dev = dev;
	s->granule = v[P_GRANULE].u * MSIM_MiB;
	s->threshold = v[P_THRESHOLD].none ? UINT64_MAX
					   : v[P_THRESHOLD].u * MSIM_MiB;
	s->align = v[P_ALIGN].u;
	s->large_align = v[P_LARGE_ALIGN].u * 1024;
	s->large_min = v[P_LARGE_MIN].u * 1024;
	if (ca_range_insert(s, 0, CA_VA_BASE, CA_VA_SIZE)) {
		free(s);
		return MSIM_ENOMEM;
	}
	*state_out = s;
	return 0;
}

const msim_policy_ops_t msim_policy_cuda_async = {
	.name = "cuda-async",
	.summary = "CUDA's stream-ordered pool (cudaMallocAsync), fitted to "
		   "an H200",
	.params = ca_params,
	.create = ca_create,
	.alloc = ca_alloc,
	.free = ca_free,
	.empty_cache = ca_empty_cache,
	.stats = ca_stats,
	.free_info = ca_free_info,
	.destroy = ca_destroy,
};
