/*
 * cuda-async: CUDA's stream-ordered allocator (cudaMallocAsync and
 * cudaFreeAsync from the device's default cudaMemPool_t), as PyTorch's
 * backend:cudaMallocAsync drives it (mallocAsync, free_impl and emptyCache
 * in CUDAMallocAsyncAllocator.cpp): every request is a cudaMallocAsync of
 * its exact size, every free a cudaFreeAsync, the release threshold is
 * UINT64_MAX, and empty_cache is cudaMemPoolTrimTo(pool, 0).
 *
 * The driver's pool is closed source; these are its rules as probed on an
 * H200 (driver 580.159.04, CUDA 13.0), one probe each, written down in
 * docs/cuda-async.md §2:
 *
 * - Placement (§2.1, §3.1): one virtual range; every block is the
 *   request rounded up to 512 B (the same for 1 B and for 2 GiB); it goes
 *   at the start of the smallest free range that holds it, and among free
 *   ranges of the same size the one that entered its set first.  A freed
 *   block is pending on its stream (its cudaFreeAsync not yet known
 *   complete) and merges with the stream's pending neighbours only; a
 *   request searches its stream's pending ranges first, then the old
 *   (completed) ones, then those pending on other streams, stream by
 *   stream in the order they first allocated from the pool (§3.5: what
 *   cudaMemPoolReuseAllowInternalDependencies allows).  When none holds
 *   it, every pending free completes: pending ranges turn old newest
 *   first and old neighbours merge; then the old ones again, then the space above the highest
 *   block ever used (the top), from the start of a free range just below
 *   it if there is one.  An old range just below the top is part of the
 *   top.  A block that needs a granule mapped completes every pending
 *   free too.  A merged pending range, and the rest of a split one, enter
 *   their set anew.
 * - Physical memory (§2.2): 32 MiB granules, counted from the start of the
 *   range.  A granule is needed while a live block touches it.  The pool
 *   keeps the granules it mapped and remaps a free one wherever a block
 *   needs one; it maps more only when none is free.  reserved_bytes is the
 *   granules held times 32 MiB, and the driver's cudaMemGetInfo drop
 *   agrees with it (the high-water mark counts physical memory).
 * - Trimming (§2.3): cudaMemPoolTrimTo(keep) unmaps free granules, in the
 *   middle of the range too, down to max(needed, ceil(keep / 32 MiB));
 *   a granule with any live byte stays.  A release threshold below what is
 *   held takes effect at the next synchronisation, which traces do not
 *   show: memsim applies it at each free.
 * - Streams (§2.4, §3.1, §3.5): a block freed on one stream is reused
 *   by another once the free is known complete, or before that when
 *   nothing else holds the request.  A synchronisation completes pending
 *   frees (cudaDeviceSynchronize all of them); traces carry none but
 *   empty_cache, whose cudaDeviceSynchronize precedes the trim.
 *
 * The pending rules were read off the block addresses of whole-trace
 * replays and of random small scenarios, then confirmed by probes (§3.1,
 * §3.5); the driver still parts from them sometimes, when it completes a
 * pending range below an old one early (§3.3 b, §3.5 f; docs/validation.md,
 * "cuda-async against the real pool").
 *
 * Statistics as PyTorch reports this backend: allocated and active bytes
 * are the exact bytes asked for (cudaMemPoolAttrUsedMemCurrent counts the
 * exact sizes; so is requested_bytes here); one pool, MSIM_POOL_LARGE.
 * Cost: the free ranges are kept by address (for the neighbour merges)
 * and in two indexes by (stream, size, seq, address), one for the pending
 * ranges and one for the old: the best fit is a binary search,
 * O(log regions); an insert or removal moves array entries (memmove),
 * and completing the pending frees (on a miss or a mapping) rebuilds the
 * old index, O(regions log regions).
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/kit.h"
#include "sim/policy.h"
#include "sim/error.h"
#include "sim/grow.h"

#define CA_VA_BASE UINT64_C(0x700000000000) /* the pool's virtual range */
#define CA_VA_SIZE (UINT64_C(1) << 44)

typedef struct ca_range_s {
	msim_addr_t addr;
	uint64_t size;
	uint64_t seq;   /* when it entered its set: the tie-break (§3.1) */
	msim_stream_t stream; /* a pending range's stream (0 when old) */
	bool recent;    /* a pending free, not yet known complete (§3.1) */
	bool top;       /* the never-used space above the high-water mark */
} ca_range_t;

/* An entry of a size index: ordered by stream, then size, then seq, then
 * address: within one stream the order of preference of the best fit
 * (§2.1, §3.1). */
typedef struct ca_key_s {
	msim_stream_t stream;
	uint64_t size;
	uint64_t seq;
	msim_addr_t addr;
} ca_key_t;

/* A sorted array of keys. */
typedef struct ca_index_s {
	ca_key_t *v;
	size_t n;
} ca_index_t;

typedef struct ca_block_s {
	msim_addr_t addr;
	uint64_t size;      /* bytes occupied (rounded) */
	uint64_t requested; /* bytes asked for */
	msim_stream_t stream; /* freed on it (PyTorch's free_impl) */
} ca_block_t;

typedef struct ca_state_s {
	msim_device_t *dev;
	/* configuration */
	uint64_t granule;    /* bytes */
	uint64_t threshold;  /* release threshold, bytes */
	uint64_t align;      /* rounding of every block */
	/* state */
	ca_range_t *free;    /* sorted by address; neighbours of one kind
			      * (pending on one stream, or old) merged; the
			      * top last */
	size_t nfree, capfree;
	ca_index_t recent;   /* the pending ranges by stream and size */
	ca_index_t old;      /* the old ones, likewise; capfree entries */
	ca_key_t *scratch;   /* capfree entries, for ca_retire */
	uint64_t seq;
	msim_stream_t *streams; /* in the order of their first malloc (§3.5) */
	size_t nstreams, capstreams;
	uint32_t *gref;      /* live blocks touching each granule */
	size_t ngref;
	uint64_t touched;    /* granules with gref > 0 */
	uint64_t phys;       /* granules mapped */
	uint64_t used;       /* bytes of live blocks (rounded) */
	msim_live_t live;
	msim_stats_t st;
} ca_state_t;

enum { P_THRESHOLD, P_GRANULE, P_ALIGN };

static const msim_param_spec_t ca_params[] = {
	[P_THRESHOLD] = {"release_threshold_mb", MSIM_PT_UINT, "none", 0, 1e9,
		MSIM_PF_NONE_OK, "cudaMemPoolAttrReleaseThreshold (none: "
		"UINT64_MAX, keep everything, as PyTorch sets it)", NULL},
	[P_GRANULE] = {"granule_mb", MSIM_PT_UINT, "32", 1, 1024,
		MSIM_PF_POW2, "physical mapping granularity (H200: 32)", NULL},
	[P_ALIGN] = {"alignment", MSIM_PT_UINT, "512", 256, 1048576,
		MSIM_PF_POW2, "alignment and rounding of every block, bytes "
		"(H200: 512)", NULL},
	{NULL, 0, NULL, 0, 0, 0, NULL, NULL},
};

/* Room for k more free ranges (and as many index entries).  Returns 0
 * or MSIM_ENOMEM. */
static int
ca_reserve(ca_state_t *s, size_t k)
{
	if (s->nfree + k <= s->capfree)
		return 0;
	size_t cap = s->capfree ? 2 * s->capfree : 64;
	ca_key_t *kr = realloc(s->recent.v, cap * sizeof(*kr));
	if (!kr)
		return MSIM_ENOMEM;
	s->recent.v = kr;
	ca_key_t *ko = realloc(s->old.v, cap * sizeof(*ko));
	if (!ko)
		return MSIM_ENOMEM;
	s->old.v = ko;
	ca_key_t *ks = realloc(s->scratch, cap * sizeof(*ks));
	if (!ks)
		return MSIM_ENOMEM;
	s->scratch = ks;
	ca_range_t *v = realloc(s->free, cap * sizeof(*v));
	if (!v)
		return MSIM_ENOMEM;
	s->free = v;
	s->capfree = cap;
	return 0;
}

static int
ca_key_cmp(const ca_key_t *a, const ca_key_t *b)
{
	if (a->stream != b->stream)
		return a->stream < b->stream ? -1 : 1;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return 0;
}

static int
ca_key_qcmp(const void *a, const void *b)
{
	return ca_key_cmp(a, b);
}

/* The first entry of x not below k. */
static size_t
ca_index_lower(const ca_index_t *x, const ca_key_t *k)
{
	size_t lo = 0, hi = x->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ca_key_cmp(&x->v[mid], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The index range r belongs in: none for the top. */
static ca_index_t *
ca_index_of(ca_state_t *s, const ca_range_t *r)
{
	return r->top ? NULL : r->recent ? &s->recent : &s->old;
}

/* Enters r into its index (room reserved by ca_reserve). */
static void
ca_index_add(ca_state_t *s, const ca_range_t *r)
{
	ca_index_t *x = ca_index_of(s, r);
	if (!x)
		return;
	ca_key_t k = {r->recent ? r->stream : 0, r->size, r->seq, r->addr};
	size_t at = ca_index_lower(x, &k);
	memmove(&x->v[at + 1], &x->v[at], (x->n - at) * sizeof(*x->v));
	x->v[at] = k;
	x->n++;
}

/* Takes r out of its index, where it is. */
static void
ca_index_del(ca_state_t *s, const ca_range_t *r)
{
	ca_index_t *x = ca_index_of(s, r);
	if (!x)
		return;
	ca_key_t k = {r->recent ? r->stream : 0, r->size, r->seq, r->addr};
	size_t at = ca_index_lower(x, &k);
	memmove(&x->v[at], &x->v[at + 1], (x->n - at - 1) * sizeof(*x->v));
	x->n--;
}

/* Inserts free range r at index at (room reserved by the caller). */
static void
ca_range_insert(ca_state_t *s, size_t at, ca_range_t r)
{
	memmove(&s->free[at + 1], &s->free[at],
		(s->nfree - at) * sizeof(*s->free));
	s->free[at] = r;
	s->nfree++;
	ca_index_add(s, &r);
}

static void
ca_range_remove(ca_state_t *s, size_t at)
{
	ca_index_del(s, &s->free[at]);
	memmove(&s->free[at], &s->free[at + 1],
		(s->nfree - at - 1) * sizeof(*s->free));
	s->nfree--;
}

/* The index in the address-ordered array of the range at addr (which is
 * there). */
static size_t
ca_find(const ca_state_t *s, msim_addr_t addr)
{
	size_t lo = 0, hi = s->nfree;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->free[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
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

/* cudaMemPoolTrimTo(pool, keep): unmaps free granules while more than
 * ceil(keep / granule) are held; granules in use stay (§2.3). */
static void
ca_trim(ca_state_t *s, uint64_t keep)
{
	uint64_t g = msim_ceil_to(keep, s->granule) / s->granule;
	if (g < s->touched)
		g = s->touched;
	if (s->phys > g) {
		msim_device_unmap(s->dev, CA_VA_BASE, (s->phys - g) *
				  s->granule, MSIM_POOL_LARGE);
		s->phys = g;
	}
}

/* Whether ranges a and b (a just below b) merge: adjacent, neither the
 * top, both old or both pending on one stream (§3.1). */
static bool
ca_mergeable(const ca_range_t *a, const ca_range_t *b)
{
	return a->addr + a->size == b->addr && !a->top && !b->top &&
	       a->recent == b->recent &&
	       (!a->recent || a->stream == b->stream);
}

/* Completion order: by stream (its rank, in the key's stream field),
 * then newest first. */
static int
ca_retire_cmp(const void *a, const void *b)
{
	const ca_key_t *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

/* Every pending free completes (§3.1): the pending ranges enter the old
 * set stream by stream, in the order the streams first allocated (§3.5),
 * each stream's newest first, so that among old ranges of one size the
 * one freed last is taken first; old neighbours merge (the merged range
 * keeps the earlier place), and an old range just below the top joins
 * the top.  The merges go through the array alone; then the old index is
 * rebuilt and the pending one emptied.  O(ranges log ranges). */
static void
ca_retire(ca_state_t *s)
{
	/* The pending index holds every pending range: order a copy of it
	 * (each stream replaced by its rank) and hand out new seqs in that
	 * order. */
	size_t n = s->recent.n;
	memcpy(s->scratch, s->recent.v, n * sizeof(*s->scratch));
	for (size_t k = 0, r = 0; k < n; k++) {
		if (k > 0 && s->recent.v[k].stream == s->recent.v[k - 1].stream) {
			s->scratch[k].stream = s->scratch[k - 1].stream;
			continue;
		}
		for (r = 0; r < s->nstreams &&
			    s->streams[r] != s->recent.v[k].stream; r++)
			;
		s->scratch[k].stream = r; /* nstreams: never allocated */
	}
	qsort(s->scratch, n, sizeof(*s->scratch), ca_retire_cmp);
	for (size_t k = 0; k < n; k++)
		s->free[ca_find(s, s->scratch[k].addr)].seq = ++s->seq;
	for (size_t i = 0; i < s->nfree; i++) {
		s->free[i].recent = false;
		s->free[i].stream = 0;
	}
	size_t w = 0;
	for (size_t i = 0; i < s->nfree; i++) {
		ca_range_t *a = w > 0 ? &s->free[w - 1] : NULL;
		if (a && a->addr + a->size == s->free[i].addr &&
		    s->free[i].top && !a->top) { /* joins the top */
			a->size += s->free[i].size;
			a->top = true;
		} else if (a && ca_mergeable(a, &s->free[i])) {
			a->size += s->free[i].size;
			if (s->free[i].seq < a->seq)
				a->seq = s->free[i].seq;
		} else {
			s->free[w++] = s->free[i];
		}
	}
	s->nfree = w;
	s->recent.n = 0;
	s->old.n = 0;
	for (size_t i = 0; i < s->nfree; i++)
		if (!s->free[i].top)
			s->old.v[s->old.n++] = (ca_key_t){0, s->free[i].size,
				s->free[i].seq, s->free[i].addr};
	qsort(s->old.v, s->old.n, sizeof(*s->old.v), ca_key_qcmp);
}

/* The free range for n bytes among the ranges pending on stream (recent
 * true) or the old ones (false), never the top: the smallest that holds
 * them, the one that entered its set first among equals (§2.1, §3.1).
 * Returns its index, or nfree. */
static size_t
ca_best_fit(const ca_state_t *s, uint64_t n, bool recent,
	    msim_stream_t stream)
{
	const ca_index_t *x = recent ? &s->recent : &s->old;
	ca_key_t k = {recent ? stream : 0, n, 0, 0};
	size_t at = ca_index_lower(x, &k);
	if (at == x->n || x->v[at].stream != k.stream)
		return s->nfree;
	return ca_find(s, x->v[at].addr);
}

/* The free range for n bytes among the ranges pending on streams other
 * than stream: stream by stream, in the order they first allocated from
 * the pool, the best fit within the first that has one (§3.5).  Returns
 * its index, or nfree. */
static size_t
ca_best_fit_other(const ca_state_t *s, uint64_t n, msim_stream_t stream)
{
	for (size_t k = 0; k < s->nstreams; k++) {
		if (s->streams[k] == stream)
			continue;
		size_t i = ca_best_fit(s, n, true, s->streams[k]);
		if (i < s->nfree)
			return i;
	}
	return s->nfree;
}

/* Whether a block of n bytes at addr needs a granule mapped: more
 * granules touched than mapped, none free to remap (§2.2 b). */
static bool
ca_needs_map(const ca_state_t *s, msim_addr_t addr, uint64_t n)
{
	uint64_t g0 = (addr - CA_VA_BASE) / s->granule;
	uint64_t g1 = (addr + n - 1 - CA_VA_BASE) / s->granule;
	uint64_t fresh = 0;
	for (uint64_t g = g0; g <= g1; g++)
		fresh += g >= s->ngref || s->gref[g] == 0;
	return s->touched + fresh > s->phys;
}

/* Notes stream among the pool's streams, last if it is new.  Returns 0
 * or MSIM_ENOMEM. */
static int
ca_note_stream(ca_state_t *s, msim_stream_t stream)
{
	for (size_t k = 0; k < s->nstreams; k++)
		if (s->streams[k] == stream)
			return 0;
	if (MSIM_GROW(s->streams, s->capstreams, s->nstreams + 1, 8))
		return MSIM_ENOMEM;
	s->streams[s->nstreams++] = stream;
	return 0;
}

static int
ca_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	ca_state_t *s = state;
	/* 512 B rounding for every size; a 0-byte request (PyTorch never
	 * makes one: it hands out nullptr) takes one unit. */
	uint64_t n = msim_ceil_to(req->size ? req->size : 1, s->align);
	ca_block_t *b = malloc(sizeof(*b));
	if (!b || msim_live_put(&s->live, req->id, NULL) || ca_reserve(s, 1) ||
	    ca_note_stream(s, req->stream)) {
		free(b);
		return MSIM_ENOMEM;
	}
	/* Larger than the device: no need to look (nor to grow the granule
	 * table over it). */
	if (n > msim_device_capacity(s->dev)) {
		free(b);
		goto oom;
	}
	/* The ranges pending on the request's stream first, then the old
	 * ones, then those pending on the other streams (§3.5); when none
	 * holds the block, every pending free completes and the old ones are
	 * searched again; then the top, from the free range just below it if
	 * there is one (§3.1). */
	size_t i = ca_best_fit(s, n, true, req->stream);
	if (i == s->nfree)
		i = ca_best_fit(s, n, false, 0);
	if (i == s->nfree)
		i = ca_best_fit_other(s, n, req->stream);
	/* A range that would need a granule mapped counts as a miss: the
	 * pending frees complete before memory is mapped (§3.5 e). */
	if (i < s->nfree && s->recent.n > 0 &&
	    ca_needs_map(s, s->free[i].addr, n))
		i = s->nfree;
	if (i == s->nfree) {
		ca_retire(s);
		i = ca_best_fit(s, n, false, 0);
	}
	if (i == s->nfree) {
		i = s->nfree - 1; /* the top */
		if (i > 0 && s->free[i - 1].addr + s->free[i - 1].size ==
			     s->free[i].addr) {
			ca_index_del(s, &s->free[i - 1]);
			s->free[i - 1].size += s->free[i].size;
			s->free[i - 1].top = true; /* in no index now */
			ca_range_remove(s, i);
			i--;
		}
		if (s->free[i].size < n) { /* the virtual range is exhausted */
			free(b);
			goto oom;
		}
	}
	msim_addr_t at = s->free[i].addr;
	uint64_t g0 = (at - CA_VA_BASE) / s->granule;
	uint64_t g1 = (at + n - 1 - CA_VA_BASE) / s->granule;
	if (ca_gref_cover(s, g1)) {
		free(b);
		return MSIM_ENOMEM;
	}
	uint64_t fresh = 0;
	for (uint64_t g = g0; g <= g1; g++)
		fresh += s->gref[g] == 0;
	bool mapped = s->touched + fresh > s->phys;
	if (mapped) { /* no free granule to remap */
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
	/* The block takes the front of the range; the rest stays free, of
	 * the same kind, and enters its set anew (§3.1). */
	ca_range_t *r = &s->free[i];
	if (r->size > n || r->top) { /* in place: the order stays */
		ca_index_del(s, r);
		r->addr += n;
		r->size -= n;
		if (!r->top)
			r->seq = ++s->seq;
		ca_index_add(s, r);
	} else {
		ca_range_remove(s, i);
	}
	*b = (ca_block_t){at, n, req->size, req->stream};
	s->live.v[req->id] = b;
	s->used += n;
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
	if (ca_reserve(s, 1)) {
		s->live.v[req->id] = b;
		return MSIM_ENOMEM;
	}
	msim_kit_count_free(&s->st, MSIM_POOL_LARGE, b->requested,
			    b->requested);
	s->used -= b->size;
	uint64_t g0 = (b->addr - CA_VA_BASE) / s->granule;
	uint64_t g1 = (b->addr + b->size - 1 - CA_VA_BASE) / s->granule;
	for (uint64_t g = g0; g <= g1; g++)
		if (--s->gref[g] == 0)
			s->touched--;
	/* Back into the free ranges as one pending on its stream, merged
	 * with the stream's pending neighbours (§3.1). */
	size_t lo = ca_find(s, b->addr);
	ca_range_t r = {b->addr, b->size, ++s->seq, b->stream, true, false};
	bool up = lo < s->nfree && ca_mergeable(&r, &s->free[lo]);
	bool down = lo > 0 && ca_mergeable(&s->free[lo - 1], &r);
	if (down) { /* in place, the merged range as new as the free */
		ca_range_t *p = &s->free[lo - 1];
		ca_index_del(s, p);
		p->size += r.size + (up ? s->free[lo].size : 0);
		p->seq = r.seq;
		ca_index_add(s, p);
		if (up)
			ca_range_remove(s, lo);
	} else if (up) {
		ca_range_t *n = &s->free[lo];
		ca_index_del(s, n);
		n->addr = r.addr;
		n->size += r.size;
		n->seq = r.seq;
		ca_index_add(s, n);
	} else {
		ca_range_insert(s, lo, r);
	}
	free(b);
	if (s->threshold != UINT64_MAX && s->phys * s->granule > s->threshold)
		ca_trim(s, s->threshold);
	return 0;
}

/* PyTorch's emptyCache: cudaDeviceSynchronize, which completes every
 * pending free (§3.5), then cudaMemPoolTrimTo(pool, 0). */
static int
ca_empty_cache(void *state)
{
	ca_retire(state);
	ca_trim(state, 0);
	return 0;
}

static void
ca_stats(const void *state, msim_stats_t *out)
{
	*out = ((const ca_state_t *)state)->st;
}

/* Free space inside the mapped granules: what they hold beyond the live
 * blocks.  The largest free block is approximated by the largest free
 * range below the top one, or the room mapped above the highest block,
 * clipped to that total. */
static void
ca_free_info(const void *state, uint64_t *largest_out, uint64_t *total_out)
{
	const ca_state_t *s = state;
	uint64_t reserved = s->phys * s->granule;
	uint64_t total = reserved > s->used ? reserved - s->used : 0;
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
	free(s->recent.v);
	free(s->old.v);
	free(s->scratch);
	free(s->streams);
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
	if (ca_reserve(s, 1)) {
		free(s);
		return MSIM_ENOMEM;
	}
	ca_range_insert(s, 0, (ca_range_t){CA_VA_BASE, CA_VA_SIZE, 0, 0,
					   false, true});
	*state_out = s;
	return 0;
}

const msim_policy_ops_t msim_policy_cuda_async = {
	.name = "cuda-async",
	.summary = "CUDA's stream-ordered pool (cudaMallocAsync): best fit in "
		   "one range, recent frees first, 32 MiB granules, as "
		   "measured on an H200",
	.params = ca_params,
	.create = ca_create,
	.alloc = ca_alloc,
	.free = ca_free,
	.empty_cache = ca_empty_cache,
	.stats = ca_stats,
	.free_info = ca_free_info,
	.destroy = ca_destroy,
};
