/*
 * pytorch: PyTorch 2.11's native CUDA caching allocator
 * (c10/cuda/CUDACachingAllocator.cpp), rule by rule as
 * docs/pytorch-allocator.md
 * describes it: rounding (512 B, or power-of-two divisions), a small pool
 * (<= 1 MiB, 2 MiB segments) and a large pool, free sets per stream ordered
 * by (size, address), best fit, splitting (small: remainder >= 512 B; large:
 * remainder > 1 MiB and size < max_split_size), merging on free, oversize
 * blocks (max_split_size_mb, max_non_split_rounding_mb), the garbage
 * collector (garbage_collection_threshold, only under a cap), and under a
 * cap the chain free-just-enough-oversize, free-everything-and-retry, OOM.
 *
 * The free set: a free set per (stream, pool) is a set of bins, TLSF style
 * (128 exact bins of 512 B steps, then 32 bins per power of two), each bin a
 * list sorted by (size, address), and a two-level bitmap of non-empty bins.
 * Best fit is a short scan of one bin or a bit search: alloc and free cost
 * O(1) plus the length of one bin's list.  Pathology: many free blocks of
 * the same size make that list long (the scan keeps address order, which
 * PyTorch's tie-break needs).  Iterating bins in order visits blocks in
 * exactly the order of PyTorch's std::set, which the release loops need.
 *
 * Expandable segments (expandable_segments:True): one virtual reservation
 * per stream and pool, mapped in pages (2 MiB small, large_segment_size
 * large) as blocks need them; free unmapped ranges sit in a per-stream
 * list by address.  Deferred frees (record_stream): between
 * free_requested and free_completed a block is pending, neither allocated
 * nor free, and never merged.
 *
 * Private pools (PrivatePool: CUDA graph captures, torch.cuda.MemPool;
 * docs/pytorch-allocator.md §1.4):
 * each has free sets of its own, per stream, as the default pool has.
 * Between beginAllocateToPool and endAllocateToPool the allocations on the
 * pool's stream go to it (get_pool()); a block returns to the pool it came
 * from, so blocks freed during a capture stay in the private pool; its
 * segments are cudaFreed only once releasePool has brought its use count
 * to 0, by the next release_cached_blocks(), which the OOM retry skips
 * while a capture is underway.  The garbage collector only ever looks at
 * the default pool.  PyTorch's capture filter is the capturing stream (or,
 * for use_mem_pool, the thread); here it is the one stream of the
 * pool_begin request.  A pool with an allocator of its own
 * (MemPool(allocator)) gets its segments from it (allocPrimitive()):
 * counted as cudaMalloc segments, never expandable, placed apart
 * (msim_device_malloc_own()).  A block freed with record_stream uses while
 * a capture is underway is deferred (deferred_blocks): without
 * graph_capture_record_stream_reuse it goes back to its pool only at the
 * first malloc or release after the captures end, whatever the trace says;
 * with it, where the trace's free_completed row puts it.  A MemPool made
 * with use_on_oom lends its cached blocks to a default-pool malloc that
 * cudaMalloc could not serve, before anything is freed
 * (try_mempool_fallback()); one made with no_split never splits a block
 * (should_split()).  setCheckpointPoolState (CUDA graph trees) places the
 * blocks of the pool's checkpointed segments at their recorded addresses
 * (restore_alloc()).
 *
 * This file is the hot path (round_size(), get_free_block(), malloc(),
 * free(), the releases) and the ops table; the parameters are in
 * pytorch_conf.c, private pools and captures in pytorch_pools.c, the
 * observers (stats, samples, blocks) in pytorch_stats.c, what they share
 * in pytorch_int.h.
 */
#include <config.h>

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policies/pytorch_int.h"
#include "sim/error.h"
#include "sim/lean.h"

/* ---------------------------------------------------------------- */
/* Statistics                                                        */

/*
 * msim_stat2_inc() and _dec() of sim/types.h for the hot path: the "all"
 * copy and pool sp's, except the "all" copy's freed count, which is the
 * sum of the pools' (every change goes to both) and is summed once in
 * msim_pt_stats() instead of kept at every decrease.
 */
static inline void
pt_stat_inc(msim_stat_t *s, int sp, int64_t n)
{
	int64_t all = s[MSIM_POOL_ALL].current + n, one = s[sp].current + n;
	s[MSIM_POOL_ALL].current = all;
	s[sp].current = one;
	if (all > s[MSIM_POOL_ALL].peak)
		s[MSIM_POOL_ALL].peak = all;
	if (one > s[sp].peak)
		s[sp].peak = one;
}

static inline void
pt_stat_dec(msim_stat_t *s, int sp, int64_t n)
{
	s[MSIM_POOL_ALL].current -= n;
	s[sp].current -= n;
	s[sp].freed += n;
}

/*
 * active and active_bytes are raised only by alloc_found_block(), where
 * they are allocation and allocated_bytes plus the pending blocks (freed by
 * the caller, their free_block() still to come).  With nothing pending they
 * equal allocated's, whose peak covers them; so their peaks are kept here
 * only while something is pending, and msim_pt_stats() takes the larger.
 */
static inline void
pt_active_peak(pt_state_t *s, int sp)
{
	const int pools[2] = {MSIM_POOL_ALL, sp};
	for (int i = 0; i < 2; i++) {
		int x = pools[i];
		int64_t n = s->st.allocation[x].current + s->pend_n[x];
		int64_t bytes = s->st.allocated_bytes[x].current +
				s->pend_bytes[x];
		if (n > s->st.active[x].peak)
			s->st.active[x].peak = n;
		if (bytes > s->st.active_bytes[x].peak)
			s->st.active_bytes[x].peak = bytes;
	}
}

/* A block turns pending (n = 1) or its free_block() comes (n = -1). */
static inline void
pt_pending(pt_state_t *s, int sp, int64_t n, uint64_t size)
{
	s->pend_n[MSIM_POOL_ALL] += n;
	s->pend_n[sp] += n;
	s->pend_bytes[MSIM_POOL_ALL] += n * (int64_t)size;
	s->pend_bytes[sp] += n * (int64_t)size;
}

static inline void
pt_stat_add(msim_stat_t *s, int sp, int64_t n)
{
	if (n > 0)
		pt_stat_inc(s, sp, n);
	else if (n < 0)
		pt_stat_dec(s, sp, -n);
}

/* ---------------------------------------------------------------- */
/* Sizes                                                             */

/* get_allocation_size(): bytes of a new segment for a block of size. */
uint64_t
msim_pytorch_segment_size(uint64_t size, uint64_t large_segment)
{
	if (size <= PT_SMALL_SIZE)
		return PT_SMALL_BUFFER;
	if (size < PT_MIN_LARGE_ALLOC)
		return large_segment;
	return ceil_to(size, PT_ROUND_LARGE);
}

/* ---------------------------------------------------------------- */
/* Blocks, streams, live table                                       */

/* Makes sure the next few blk_new() calls (at most 4) succeed.  Returns
 * false when out of host memory. */
static inline bool
blk_reserve(pt_state_t *s)
{
	if (s->nspare >= 4)
		return true;
	pt_slab_t *slab = aligned_alloc(_Alignof(pt_slab_t),
					sizeof(*slab));
	if (!slab)
		return false;
	slab->next = s->slabs;
	s->slabs = slab;
	for (size_t i = 0; i < 256; i++) {
		slab->blocks[i].fnext = s->spare;
		s->spare = &slab->blocks[i];
	}
	s->nspare += 256;
	return true;
}

/* A block from the spare list (blk_reserve() ran before); the caller
 * sets every field. */
static inline pt_block_t *
blk_new(pt_state_t *s)
{
	pt_block_t *b = s->spare;
	assert(b);
	s->spare = b->fnext;
	s->nspare--;
	return b;
}

static inline void
blk_put(pt_state_t *s, pt_block_t *b)
{
	b->fnext = s->spare;
	s->spare = b;
	s->nspare++;
}

/* The stream handle of a table sorted by handle, added if new. */
static pt_stream_t *
stream_table(pt_stream_t ***vp, size_t *np, msim_stream_t handle,
	     pt_ppool_t *pp)
{
	pt_stream_t **v = *vp;
	size_t lo = 0, hi = *np;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid]->handle < handle)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < *np && v[lo]->handle == handle)
		return v[lo];
	v = realloc(v, (*np + 1) * sizeof(*v));
	if (!v)
		return NULL;
	*vp = v;
	pt_stream_t *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->handle = handle;
	st->pp = pp;
	memmove(&v[lo + 1], &v[lo], (*np - lo) * sizeof(*v));
	v[lo] = st;
	(*np)++;
	return st;
}

/* The default pool's stream handle. */
static pt_stream_t *
pt_stream(pt_state_t *s, msim_stream_t handle)
{
	if (s->last_stream && s->last_stream->handle == handle)
		return s->last_stream;
	pt_stream_t *st = stream_table(&s->streams, &s->nstreams, handle,
				       NULL);
	return st ? (s->last_stream = st) : NULL;
}

/* get_pool(): the stream state of a request, in a private pool while a
 * capture of its stream is underway, in *st_out.  Returns 0, MSIM_ENOMEM,
 * or MSIM_EINVAL when the capture's pool is gone: released while the
 * capture was underway (releasePool()), then emptied
 * (release_cached_blocks() erases a freeable pool with no segment), where
 * get_pool()'s TORCH_INTERNAL_ASSERT(it1 != graph_pools.end()) fails the
 * malloc. */
static __attribute__((noinline)) int
request_stream(pt_state_t *s, msim_stream_t handle, pt_stream_t **st_out)
{
	const pt_capture_t *c = s->ncaptures ? capture_of(s, handle) : NULL;
	pt_ppool_t *pp = c ? ppool_find(s, c->pool) : NULL;
	if (c && !pp)
		return MSIM_EINVAL;
	*st_out = pp ? stream_table(&pp->streams, &pp->nstreams, handle, pp)
		     : pt_stream(s, handle);
	return *st_out ? 0 : MSIM_ENOMEM;
}

/* request_stream(), with the usual case inline: no capture underway, the
 * stream of the last request. */
static inline __attribute__((always_inline)) int
pt_request_stream(pt_state_t *s, msim_stream_t handle, const bool plain,
		  pt_stream_t **st_out)
{
	if ((plain || !s->ncaptures) && s->last_stream &&
	    s->last_stream->handle == handle) {
		*st_out = s->last_stream;
		return 0;
	}
	return request_stream(s, handle, st_out);
}

static inline int
live_put(pt_state_t *s, uint32_t id, pt_block_t *b)
{
	if (id >= s->nlive) {
		size_t n = s->nlive ? s->nlive : 1024;
		while (n <= id)
			n *= 2;
		pt_block_t **v = realloc(s->live, n * sizeof(*v));
		if (!v)
			return MSIM_ENOMEM;
		memset(v + s->nlive, 0, (n - s->nlive) * sizeof(*v));
		s->live = v;
		s->nlive = n;
	}
	s->live[id] = b;
	return 0;
}

/* ---------------------------------------------------------------- */
/* Expandable segments (docs/pytorch-allocator.md §7)                */

/* The size an expandable block can grow to: itself and the unmapped
 * range after it. */
static inline uint64_t
xsize(const pt_block_t *b)
{
	return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

/* The stream's unmapped ranges of pool are a list sorted by address. */
static bool
addr_less(const pt_block_t *a, const pt_block_t *b)
{
	return a->ptr < b->ptr;
}

static void
um_insert(pt_block_t *b)
{
	list_insert(&b->st->unmapped[b->pool], b, addr_less);
}

static void
um_remove(pt_block_t *b)
{
	list_remove(&b->st->unmapped[b->pool], b);
}

/* Puts the new block nb between a and c (either may be NULL). */
static void
splice(pt_block_t *nb, pt_block_t *a, pt_block_t *c)
{
	nb->prev = a;
	nb->next = c;
	if (a)
		a->next = nb;
	if (c)
		c->prev = nb;
}

static inline uint64_t try_merge(pt_state_t *s, pt_block_t *b,
				 pt_block_t *src);

/* map_block(): maps the pages covering the first size bytes of the
 * unmapped block b, which becomes a free mapped block (merged with free
 * neighbours).  Returns false if the device has no room. */
static bool
map_block(pt_state_t *s, pt_block_t *b, uint64_t size)
{
	const pt_xseg_t *x = b->xseg;
	uint64_t len = ceil_to(size, x->page);
	if (!blk_reserve(s) ||
	    msim_device_map(s->dev, b->ptr, len, PT_STATPOOL(b->pool)))
		return false;
	um_remove(b);
	b->mapped = 1;
	if (len < b->size) {
		pt_block_t *rest = blk_new(s);
		*rest = (pt_block_t){.ptr = b->ptr + len, .size = b->size - len,
				     .st = b->st, .xseg = b->xseg,
				     .pool = b->pool};
		splice(rest, b, b->next);
		um_insert(rest);
		b->size = len;
	}
	try_merge(s, b, b->prev);
	try_merge(s, b, b->next);
	fs_insert(s, &b->st->fs[b->pool], b);
	s->total_allocated += len;
	return true;
}

static inline bool
allocatable(const pt_block_t *b)
{
	return b && b->state == B_FREE;
}

/* find_expandable_block(): the lowest unmapped range (with the free
 * block before it) that has size bytes of room, or a new segment. */
static pt_block_t *
find_expandable(pt_state_t *s, pt_stream_t *st, int pool, uint64_t size)
{
	for (pt_block_t *u = st->unmapped[pool]; u; u = u->fnext) {
		pt_block_t *c = allocatable(u->prev) ? u->prev : u;
		uint64_t room = 0;
		for (pt_block_t *b = c; room < size && allocatable(b); b = b->next)
			room += b->size;
		if (room >= size)
			return c;
	}
	uint64_t page = pool == PT_SMALL ? PT_SMALL_BUFFER : s->large_segment;
	uint64_t total = msim_device_capacity(s->dev);
	pt_xseg_t *x = calloc(1, sizeof(*x));
	if (!x || !blk_reserve(s))
		goto fail;
	x->page = page;
	x->size = ceil_to(total + total / 8, page);
	if (msim_device_reserve(s->dev, x->size, &x->base))
		goto fail;
	x->next = s->xsegs;
	s->xsegs = x;
	pt_block_t *c = blk_new(s);
	*c = (pt_block_t){.ptr = x->base, .size = x->size, .st = st, .xseg = x,
			  .pool = (uint8_t)pool};
	um_insert(c);
	return c;
fail:
	free(x);
	return NULL;
}

/* try_allocate_expandable_block(): maps pages until a free block of size
 * bytes exists; returns it, out of the free set, or NULL. */
static pt_block_t *
alloc_expandable(pt_state_t *s, pt_stream_t *st, int pool, uint64_t size)
{
	pt_block_t *c = find_expandable(s, st, pool, size);
	if (!c)
		return NULL;
	if (!c->mapped && !map_block(s, c, c->size < size ? c->size : size))
		return NULL;
	while (c->size < size) {
		pt_block_t *n = c->next; /* unmapped, right after c */
		uint64_t want = size - c->size;
		if (!map_block(s, n, want < n->size ? want : n->size))
			return NULL;
		c = n; /* n absorbed c */
	}
	fs_remove(s, &c->st->fs[c->pool], c);
	return c;
}

/* unmap_block(): unmaps the whole pages inside the free block b; the
 * mapped remainders before and after stay free blocks. */
static void
unmap_block(pt_state_t *s, pt_block_t *b)
{
	const pt_xseg_t *x = b->xseg;
	uint64_t first = ceil_to(b->ptr - x->base, x->page);
	uint64_t last = (b->ptr + b->size - x->base) / x->page * x->page;
	if (first >= last || !blk_reserve(s))
		return;
	msim_addr_t uptr = x->base + first;
	uint64_t ulen = last - first;
	pt_freeset_t *fs = &b->st->fs[b->pool];
	fs_remove(s, fs, b);
	uint64_t before = uptr - b->ptr, after = b->size - before - ulen;
	if (before) {
		pt_block_t *nb = blk_new(s);
		*nb = (pt_block_t){.ptr = b->ptr, .size = before, .st = b->st,
				   .xseg = b->xseg, .pool = b->pool,
				   .mapped = 1};
		splice(nb, b->prev, b);
		fs_insert(s, fs, nb);
	}
	if (after) {
		pt_block_t *nb = blk_new(s);
		*nb = (pt_block_t){.ptr = uptr + ulen, .size = after,
				   .st = b->st, .xseg = b->xseg,
				   .pool = b->pool, .mapped = 1};
		splice(nb, b, b->next);
		fs_insert(s, fs, nb);
	}
	b->ptr = uptr;
	b->size = ulen;
	b->mapped = 0;
	try_merge(s, b, b->prev);
	try_merge(s, b, b->next);
	um_insert(b);
	s->total_allocated -= ulen;
	if (b->st->pp)
		b->st->pp->nmalloc--;
	msim_device_unmap(s->dev, uptr, ulen, PT_STATPOOL(b->pool));
}

/* release_expandable_segment(): b spans the whole unmapped reservation. */
static void
release_xseg(pt_state_t *s, pt_block_t *b)
{
	um_remove(b);
	msim_device_unreserve(s->dev, b->xseg->base);
	for (pt_xseg_t **pp = &s->xsegs; *pp; pp = &(*pp)->next) {
		if (*pp == b->xseg) {
			*pp = b->xseg->next;
			break;
		}
	}
	free(b->xseg);
	blk_put(s, b);
}

/* ---------------------------------------------------------------- */
/* The allocator                                                     */

/* get_free_block(): the best cached block for size, removed from its set. */
static inline __attribute__((always_inline)) pt_block_t *
get_free_block(pt_state_t *s, pt_freeset_t *fs, int pool, uint64_t size,
	       bool default_pool, const bool plain)
{
	/* Each BlockPool counts its own lookups; only the default pool's
	 * count ages blocks for the garbage collector. */
	if (!plain && s->gc_enabled && default_pool)
		s->gc_calls[pool]++;
	pt_block_t *b = fs_lower_bound(fs, size);
	if (!b)
		return NULL;
	if (!plain && b->xseg) {
		/* Best fit by the size a block can grow to: prefer a strictly
		 * smaller growable block further on. */
		for (pt_block_t *n = fs_next(fs, b); b->xseg && n &&
		     xsize(n) < xsize(b); n = fs_next(fs, n))
			b = n;
	}
	if (!pt_oversize(s, size, plain) && pt_oversize(s, b->size, plain))
		return NULL; /* no oversize block for a small request */
	if (pt_oversize(s, size, plain) && b->size >= size + s->nonsplit_tol)
		return NULL; /* too much waste for an oversize request */
	fs_remove(s, fs, b);
	return b;
}

/* release_block(): cudaFree of a whole free segment. */
static void
release_block(pt_state_t *s, pt_block_t *b)
{
	assert(!blk_is_split(b) && b->state == B_FREE);
	if (b->st->pp)
		b->st->pp->nmalloc--;
	fs_remove(s, &b->st->fs[b->pool], b);
	if (b->st->pp && b->st->pp->own_alloc) /* the allocator's raw_delete */
		msim_device_free_own(s->dev, b->ptr, b->size,
				     PT_STATPOOL(b->pool));
	else
		msim_device_free(s->dev, b->ptr, b->size, PT_STATPOOL(b->pool));
	s->total_allocated -= b->size;
	if (b->size >= s->max_split)
		msim_stat_dec(&s->st.oversize_segments, 1);
	blk_put(s, b);
}

/* garbage_collect_cached_blocks(): frees old unused large segments until
 * the device total falls under threshold x cap (full passes). */
static void
garbage_collect(pt_state_t *s)
{
	uint64_t threshold = (uint64_t)(s->gc_threshold * (double)s->cap);
	if (s->total_allocated <= threshold)
		return;
	uint64_t target = s->total_allocated - threshold;
	uint64_t now = s->gc_calls[PT_LARGE];
	double total_age = 0.0;
	size_t n = 0;
	for (size_t i = 0; i < s->nstreams; i++) {
		const pt_freeset_t *fs = &s->streams[i]->fs[PT_LARGE];
		for (pt_block_t *b = fs_first(fs); b; b = fs_next(fs, b)) {
			if (!blk_is_split(b)) {
				total_age += (double)(now - b->gc_base);
				n++;
			}
		}
	}
	uint64_t reclaimed = 0;
	bool freed = true;
	while (reclaimed < target && freed && n > 0) {
		double avg = total_age / (double)n;
		freed = false;
		for (size_t i = 0; i < s->nstreams; i++) {
			pt_freeset_t *fs = &s->streams[i]->fs[PT_LARGE];
			pt_block_t *next;
			for (pt_block_t *b = fs_first(fs); b; b = next) {
				next = fs_next(fs, b);
				double age = (double)(now - b->gc_base);
				if (blk_is_split(b) || b->xseg || age < avg)
					continue;
				freed = true;
				reclaimed += b->size;
				total_age -= age;
				n--;
				release_block(s, b);
			}
		}
	}
}

/* alloc_block(): a new segment of seg_size bytes, or NULL. */
static pt_block_t *
alloc_block(pt_state_t *s, pt_stream_t *st, int pool, uint64_t size,
	    uint64_t seg_size, bool retry)
{
	if (retry)
		s->st.num_alloc_retries++;
	if (s->cap && s->total_allocated + seg_size > s->cap)
		return NULL;
	bool own = st->pp && st->pp->own_alloc;
	if (s->expandable && !own) {
		pt_block_t *x = alloc_expandable(s, st, pool, size);
		if (x && st->pp)
			st->pp->nmalloc++;
		return x;
	}
	/* A pool's own allocator instead of cudaMalloc (allocPrimitive()):
	 * the same accounting, never expandable. */
	msim_addr_t addr;
	if (own ? msim_device_malloc_own(s->dev, seg_size, PT_STATPOOL(pool),
					 &addr)
		: msim_device_malloc(s->dev, seg_size, PT_STATPOOL(pool),
				     &addr))
		return NULL;
	if (st->pp)
		st->pp->nmalloc++;
	pt_block_t *b = blk_new(s);
	*b = (pt_block_t){.ptr = addr, .size = seg_size, .st = st,
			  .pool = (uint8_t)pool, .mapped = 1};
	s->total_allocated += seg_size;
	if (seg_size >= s->max_split)
		msim_stat_inc(&s->st.oversize_segments, 1);
	return b;
}

/* release_available_cached_blocks(): frees just enough oversize segments
 * of this stream and pool for size.  Returns whether that sufficed. */
static bool
release_available(pt_state_t *s, pt_freeset_t *fs, uint64_t size)
{
	if (s->max_split == PT_UNLIMITED)
		return false;
	uint64_t key = size < s->max_split ? s->max_split : size;
	pt_block_t *it = fs_lower_bound(fs, key);
	if (it && !it->xseg) {
		if (blk_is_split(it))
			return false; /* PyTorch would cudaFree a piece */
		release_block(s, it);
		return true;
	}
	uint64_t released = 0;
	pt_block_t *cur = fs_prev(fs, it);
	while (cur && released < key && cur->size >= s->max_split) {
		pt_block_t *prev = fs_prev(fs, cur);
		if (!cur->xseg && !blk_is_split(cur)) {
			released += cur->size;
			release_block(s, cur);
		}
		cur = prev;
	}
	return released >= key;
}

/* release_blocks() of one pool over the streams v[0..nv), in set order. */
int
msim_pt_release_streams(pt_state_t *s, pt_stream_t **v, size_t nv,
			int pool)
{
	pt_block_t **unmap = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < nv; i++) {
		pt_freeset_t *fs = &v[i]->fs[pool];
		pt_block_t *next;
		for (pt_block_t *b = fs_first(fs); b; b = next) {
			next = fs_next(fs, b);
			if (b->xseg) { /* unmapping changes the set: later */
				if (n == cap) {
					cap = cap ? 2 * cap : 16;
					pt_block_t **u =
						realloc(unmap, cap * sizeof(*u));
					if (!u) {
						free(unmap);
						return MSIM_ENOMEM;
					}
					unmap = u;
				}
				unmap[n++] = b;
			} else if (!blk_is_split(b)) {
				release_block(s, b);
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		unmap_block(s, unmap[i]);
		if (!blk_is_split(unmap[i]) && !unmap[i]->mapped)
			release_xseg(s, unmap[i]);
	}
	free(unmap);
	return 0;
}

static inline void free_block(pt_state_t *s, pt_block_t *b, bool plain);

/* The held deferred blocks back to their pools (hold()), in the order
 * their free_completed rows came (PyTorch's order is a hash map's; the
 * resulting free sets are the same). */
void
msim_pt_release_held(pt_state_t *s)
{
	for (size_t i = 0; i < s->nheld; i++) {
		pt_block_t *b = s->held[i];
		pt_pending(s, PT_STATPOOL(b->pool), -1, b->size);
		if (b->st->pp)
			b->st->pp->nlive--;
		b->deferred = 0;
		free_block(s, b, false);
	}
	s->nheld = 0;
}

/* alloc_found_block(): hands out b for a request of size (req) bytes,
 * split as should_split() says (force < 0) or as force says (0 or 1: the
 * checkpoint restore's split, setSegmentStateToCheckpoint()).  Returns the
 * allocated block: b itself, or its front when split. */
static inline __attribute__((always_inline)) pt_block_t *
alloc_found(pt_state_t *s, pt_block_t *b, uint64_t size, uint64_t req,
	    int force, const bool plain)
{
	int sp = PT_STATPOOL(b->pool);
	uint64_t remaining = b->size - size;
	/* is_expandable_segments_active: never for an own-allocator pool,
	 * whose blocks alone are not expandable when the setting is on.  A
	 * no_split pool's blocks are never split (should_split()). */
	bool split = force >= 0 ? force != 0
		: !plain && b->st->pp && b->st->pp->no_split ? false
		: b->pool == PT_SMALL || (!plain && b->xseg)
		? remaining >= PT_MIN_BLOCK
		: !pt_oversize(s, size, plain) && remaining > PT_SMALL_SIZE;
	bool already_split = blk_is_split(b);
	if (split) {
		/* The remainder keeps b's struct; a new one takes the front. */
		pt_block_t *rest = b;
		b = blk_new(s);
		/* Field by field: a compound literal zeroes the struct
		 * first, which costs more than the rest of the split. The
		 * free-list links, bin and GC age are set when a block
		 * enters a free set; requested and state just below. */
		b->ptr = rest->ptr;
		b->size = size;
		b->prev = rest->prev;
		b->next = rest;
		b->st = rest->st;
		b->xseg = plain ? NULL : rest->xseg;
		b->pool = rest->pool;
		b->mapped = 1;
		if (b->prev)
			b->prev->next = b;
		rest->prev = b;
		rest->ptr += size;
		rest->size -= size;
		fs_insert(s, &rest->st->fs[rest->pool], rest);
		if (!plain && b->xseg) {
			/* inactive_split is not kept for expandable memory */
		} else if (already_split) {
			pt_stat_dec(s->st.inactive_split_bytes, sp,
				       (int64_t)size);
		} else {
			pt_stat_inc(s->st.inactive_split_bytes, sp,
				       (int64_t)rest->size);
			pt_stat_inc(s->st.inactive_split, sp, 1);
		}
	} else if (already_split && (plain || !b->xseg)) {
		pt_stat_dec(s->st.inactive_split_bytes, sp, (int64_t)b->size);
		pt_stat_dec(s->st.inactive_split, sp, 1);
	}
	b->state = B_ALLOC;
	b->deferred = 0;
	b->requested = req;
	pt_stat_inc(s->st.allocation, sp, 1);
	pt_stat_inc(s->st.allocated_bytes, sp, (int64_t)b->size);
	if (s->pend_n[MSIM_POOL_ALL])
		pt_active_peak(s, sp); /* active, active_bytes: stats */
	pt_stat_inc(s->st.requested_bytes, sp, (int64_t)req);
	if (pt_oversize(s, b->size, plain))
		msim_stat_inc(&s->st.oversize_allocations, 1);
	return b;
}

/* try_mempool_fallback(): a default-pool malloc that cudaMalloc could not
 * serve takes a cached block of a use_on_oom pool, the first that has one
 * (beginAllocateToPool, get_free_block() in the pool, endAllocateToPool,
 * releasePool: the use count is unchanged).  PyTorch walks the pools in a
 * hash set's order; memsim in creation order.  Never a new segment.
 * Returns the block, removed from its free set, or NULL; *err_out is
 * MSIM_ENOMEM when host memory ran out. */
static pt_block_t *
mempool_fallback(pt_state_t *s, const pt_stream_t *st, int pool,
		 uint64_t size, int *err_out)
{
	*err_out = 0;
	if (st->pp)
		return NULL; /* already a private pool's request */
	for (size_t i = 0; i < s->nppools; i++) {
		pt_ppool_t *pp = s->ppools[i];
		if (!fallback_pool(pp))
			continue;
		pt_stream_t *pst = stream_table(&pp->streams, &pp->nstreams,
						st->handle, pp);
		if (!pst) {
			*err_out = MSIM_ENOMEM;
			return NULL;
		}
		pt_block_t *b = get_free_block(s, &pst->fs[pool], pool, size,
					       false, false);
		if (b)
			return b;
	}
	return NULL;
}

/* malloc() when no cached block fits: a new segment, after the garbage
 * collector and the releases that may make room, or a cached block of a
 * use_on_oom pool, or NULL (an OOM, counted).  Out of line, so that
 * pt_alloc()'s usual path, a cached block, keeps few registers to save. */
static __attribute__((noinline)) pt_block_t *
alloc_segment(pt_state_t *s, pt_stream_t *st, pt_freeset_t *fs, int pool,
	      uint64_t size, int *err_out)
{
	uint64_t seg_size = pt_segment_size(s, size);
	*err_out = 0;
	if (s->gc_enabled)
		garbage_collect(s);
	pt_block_t *b = alloc_block(s, st, pool, size, seg_size, false);
	/* PyTorch 2.11 tries the use_on_oom pools right after the first
	 * alloc_block, before freeing anything (try_mempool_fallback()). */
	if (!b && s->nppools && (b = mempool_fallback(s, st, pool, size,
						      err_out)) != NULL)
		return b;
	if (*err_out)
		return NULL;
	if (!b && release_available(s, fs, size))
		b = alloc_block(s, st, pool, size, seg_size, false);
	/* Not while a capture is underway (malloc()). */
	if (!b && !s->ncaptures) {
		msim_pt_release_cached(s);
		b = alloc_block(s, st, pool, size, seg_size, true);
	}
	if (!b) {
		s->st.num_ooms++;
		msim_device_log_oom(s->dev, size);
	}
	return b;
}

/* The free block of pool pp, out of its free set, that starts at addr, or
 * with head set the smallest whole free segment of at least size bytes
 * (the lowest-addressed of equals); NULL if none. */
static pt_block_t *
restore_find(pt_state_t *s, pt_ppool_t *pp, msim_addr_t addr, bool head,
	     uint64_t size)
{
	pt_block_t *best = NULL;
	pt_freeset_t *best_fs = NULL;
	for (size_t i = 0; i < pp->nstreams; i++) {
		for (int k = 0; k < 2; k++) {
			pt_freeset_t *fs = &pp->streams[i]->fs[k];
			for (pt_block_t *b = fs_first(fs); b;
			     b = fs_next(fs, b)) {
				bool better = !best || b->size < best->size ||
					      (b->size == best->size &&
					       b->ptr < best->ptr);
				bool ok = head ? !b->prev && !b->next &&
						 b->size >= size && better
					       : b->ptr == addr;
				if (ok) {
					best = b;
					best_fs = fs;
				}
			}
		}
	}
	if (best)
		fs_remove(s, best_fs, best);
	return best;
}

/*
 * One alloc of a checkpoint restore (setSegmentStateToCheckpoint()): after
 * freeBlocksAllocatedToPool() every block of the pool is free, and each
 * block of a checkpointed segment is allocated in address order by
 * alloc_found_block() with the block's own size, split when the free block
 * there is larger: no get_free_block(), no new segment, no rounding.  The
 * blocks not live in the checkpoint are freed by the rows after.  The
 * block is the one at the recorded address (--addresses trace); where the
 * segments lie elsewhere (model addresses), the block as far from the last
 * placed one as in the recording, else the smallest whole free segment
 * that holds it (a new segment of the checkpoint); when none of these
 * fits, the pool serves it as a malloc would (an approximation: the
 * recording's segments and the simulated ones differ).  Returns 0,
 * MSIM_EDEVOOM or MSIM_ENOMEM.
 */
static __attribute__((noinline)) int
restore_alloc(pt_state_t *s, const msim_req_t *req, msim_addr_t *addr_out)
{
	pt_ppool_t *pp = s->restore_pp;
	s->fr_last = NULL;
	if (--s->restore_left == 0)
		s->restore_pp = NULL;
	if (!blk_reserve(s) || live_put(s, req->id, NULL))
		return MSIM_ENOMEM;
	pt_block_t *b = restore_find(s, pp, req->addr, false, 0);
	if (!b && s->restore_have_delta)
		b = restore_find(s, pp, req->addr + s->restore_delta, false,
				 0);
	if (b && b->size < req->size) {
		fs_insert(s, &b->st->fs[b->pool], b);
		b = NULL;
	}
	if (!b)
		b = restore_find(s, pp, 0, true, req->size);
	if (b) {
		s->restore_delta = b->ptr - req->addr;
		s->restore_have_delta = true;
		b = alloc_found(s, b, req->size, req->size,
				b->size > req->size, false);
	} else {
		/* As malloc would, in the pool (get_pool()). */
		s->restore_have_delta = false;
		uint64_t size = pt_round(s, req->size, false);
		int pool = size <= PT_SMALL_SIZE ? PT_SMALL : PT_LARGE;
		pt_stream_t *st = stream_table(&pp->streams, &pp->nstreams,
					       req->stream, pp);
		if (!st)
			return MSIM_ENOMEM;
		b = get_free_block(s, &st->fs[pool], pool, size, false, false);
		int err = 0;
		if (!b && !(b = alloc_segment(s, st, &st->fs[pool], pool, size,
					      &err)))
			return err ? err : MSIM_EDEVOOM;
		b = alloc_found(s, b, size, req->size, -1, false);
	}
	pp->nlive++;
	s->live[req->id] = b;
	*addr_out = b->ptr;
	return 0;
}

static inline __attribute__((always_inline)) int
pt_alloc_as(pt_state_t *s, const msim_req_t *req, msim_addr_t *addr_out,
	    const bool plain)
{
	if (!plain && s->restore_left)
		return restore_alloc(s, req, addr_out);
	s->fr_last = NULL;
	if (!plain && s->nheld && !s->ncaptures)
		msim_pt_release_held(s); /* process_events() */
	uint64_t size = pt_round(s, req->size, plain);
	int pool = size <= PT_SMALL_SIZE ? PT_SMALL : PT_LARGE;
	pt_stream_t *st;
	int err = pt_request_stream(s, req->stream, plain, &st);
	if (err)
		return err;
	if (!blk_reserve(s) || live_put(s, req->id, NULL))
		return MSIM_ENOMEM;
	pt_freeset_t *fs = &st->fs[pool];

	pt_block_t *b = get_free_block(s, fs, pool, size, !st->pp, plain);
	if (!b) {
		if (!(b = alloc_segment(s, st, fs, pool, size, &err)))
			return err ? err : MSIM_EDEVOOM;
	}
	b = alloc_found(s, b, size, req->size, -1, plain);
	if (!plain && b->st->pp)
		b->st->pp->nlive++;
	s->live[req->id] = b;
	*addr_out = b->ptr;
	return 0;
}

/* The caller's free (free_requested): allocated bytes drop now. */
static inline __attribute__((always_inline)) void
free_requested(pt_state_t *s, pt_block_t *b, const bool plain)
{
	int sp = PT_STATPOOL(b->pool);
	b->state = B_PENDING;
	pt_stat_dec(s->st.allocation, sp, 1);
	pt_stat_dec(s->st.allocated_bytes, sp, (int64_t)b->size);
	if (pt_oversize(s, b->size, plain))
		msim_stat_dec(&s->st.oversize_allocations, 1);
}

/* Merges the free neighbour src into b; returns the bytes absorbed.  In
 * line always: free_block()'s usual path. */
static inline __attribute__((always_inline)) uint64_t
try_merge(pt_state_t *s, pt_block_t *b, pt_block_t *src)
{
	if (!src || src->state != B_FREE || src->mapped != b->mapped)
		return 0;
	if (src->mapped)
		fs_remove(s, &src->st->fs[src->pool], src);
	else
		um_remove(src);
	if (b->prev == src) {
		b->ptr = src->ptr;
		b->prev = src->prev;
		if (b->prev)
			b->prev->next = b;
	} else {
		b->next = src->next;
		if (b->next)
			b->next->prev = b;
	}
	b->size += src->size;
	uint64_t absorbed = src->size;
	blk_put(s, src);
	return absorbed;
}

/* free_block() (free_completed): merge, back into the free set.  Inlined
 * into its one caller, pt_give_back(), as that is into pt_free() and
 * pt_free_now(). */
static inline __attribute__((always_inline)) void
free_block(pt_state_t *s, pt_block_t *b, const bool plain)
{
	int sp = PT_STATPOOL(b->pool);
	int64_t net_blocks = 0, net_bytes = 0;
	uint64_t n;
	if ((n = try_merge(s, b, b->prev))) {
		net_blocks--;
		net_bytes -= (int64_t)n;
	}
	if ((n = try_merge(s, b, b->next))) {
		net_blocks--;
		net_bytes -= (int64_t)n;
	}
	b->state = B_FREE;
	fs_insert(s, &b->st->fs[b->pool], b);
	if (blk_is_split(b)) {
		net_blocks++;
		net_bytes += (int64_t)b->size;
	}
	if (plain || !b->xseg) {
		pt_stat_add(s->st.inactive_split, sp, net_blocks);
		pt_stat_add(s->st.inactive_split_bytes, sp, net_bytes);
	}
	/* active and active_bytes drop here: msim_pt_stats() */
	pt_stat_dec(s->st.requested_bytes, sp, (int64_t)b->requested);
}

static inline pt_block_t *
live_take(pt_state_t *s, uint32_t id)
{
	return id < s->nlive ? s->live[id] : NULL;
}

/*
 * A deferred block's free_completed while a capture is underway, without
 * graph_capture_record_stream_reuse: free() left it in deferred_blocks with
 * no free markers, and only process_events() or
 * synchronize_and_free_events() after the captures end give it back
 * (insert_events_deferred_until_no_capture(); the stream uses were all
 * recorded during the capture, so no event is left to wait for).  It
 * stays pending until msim_pt_release_held().
 */
static int
hold(pt_state_t *s, uint32_t id, pt_block_t *b)
{
	if (MSIM_GROW(s->held, s->capheld, s->nheld + 1, 8))
		return MSIM_ENOMEM;
	s->held[s->nheld++] = b;
	s->live[id] = NULL;
	return 0;
}

static inline __attribute__((always_inline)) int
pt_free_requested_as(pt_state_t *s, const msim_req_t *req, const bool plain)
{
	pt_block_t *b = live_take(s, req->id);
	if (!b || b->state != B_ALLOC)
		return MSIM_ENOTFOUND;
	free_requested(s, b, plain);
	pt_pending(s, PT_STATPOOL(b->pool), 1, b->size);
	/* free(): with stream uses while a capture is underway, the block
	 * goes to deferred_blocks rather than getting events.  Stream uses
	 * show only as a free_completed that does not follow at once. */
	b->deferred = !plain && s->ncaptures != 0;
	s->fr_last = b;
	return 0;
}

/* The block of id back (b, not free): free_requested unless done, then
 * free_block. */
static inline __attribute__((always_inline)) void
pt_give_back(pt_state_t *s, uint32_t id, pt_block_t *b, const bool plain)
{
	if (b->state == B_ALLOC)
		free_requested(s, b, plain);
	else
		pt_pending(s, PT_STATPOOL(b->pool), -1, b->size);
	s->live[id] = NULL;
	if (!plain && b->st->pp)
		b->st->pp->nlive--;
	free_block(s, b, plain);
}

static inline __attribute__((always_inline)) int
pt_free_as(pt_state_t *s, const msim_req_t *req, const bool plain)
{
	pt_block_t *b = live_take(s, req->id);
	if (!b || b->state == B_FREE)
		return MSIM_ENOTFOUND;
	bool paired = b == s->fr_last;
	s->fr_last = NULL;
	if (!plain && b->deferred && !paired && s->ncaptures &&
	    !s->graph_reuse && b->state == B_PENDING)
		return hold(s, req->id, b);
	pt_give_back(s, req->id, b, plain);
	return 0;
}

/* A free_requested row and its free_completed at once (ops->free_now). */
static inline __attribute__((always_inline)) int
pt_free_now_as(pt_state_t *s, const msim_req_t *req, const bool plain)
{
	pt_block_t *b = live_take(s, req->id);
	if (!b || b->state != B_ALLOC)
		return MSIM_ENOTFOUND;
	s->fr_last = NULL;
	pt_give_back(s, req->id, b, plain);
	return 0;
}

/* The request functions of the ops, any configuration (inlined into
 * pt_serve() too). */
static inline __attribute__((always_inline)) int
pt_alloc(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	return pt_alloc_as(state, req, addr_out, false);
}

static inline __attribute__((always_inline)) int
pt_free_requested(void *state, const msim_req_t *req)
{
	return pt_free_requested_as(state, req, false);
}

static inline __attribute__((always_inline)) int
pt_free(void *state, const msim_req_t *req)
{
	return pt_free_as(state, req, false);
}

static inline __attribute__((always_inline)) int
pt_free_now(void *state, const msim_req_t *req)
{
	return pt_free_now_as(state, req, false);
}

/* The same, for pt_plain() states only. */
static inline __attribute__((always_inline)) int
pt_alloc_plain(void *state, const msim_req_t *req, msim_addr_t *addr_out)
{
	return pt_alloc_as(state, req, addr_out, true);
}

static inline __attribute__((always_inline)) int
pt_free_requested_plain(void *state, const msim_req_t *req)
{
	return pt_free_requested_as(state, req, true);
}

static inline __attribute__((always_inline)) int
pt_free_plain(void *state, const msim_req_t *req)
{
	return pt_free_as(state, req, true);
}

static inline __attribute__((always_inline)) int
pt_free_now_plain(void *state, const msim_req_t *req)
{
	return pt_free_now_as(state, req, true);
}

/* The engine's lean loop with the functions above inlined (ops->serve,
 * sim/lean.h), a copy for the plain configuration (pt_plain()) and one for
 * any; this policy schedules no events. */
static int
pt_serve(void *state, msim_lean_t *L, const msim_req_t *v, size_t n,
	 size_t *at)
{
	if (pt_plain(state))
		return msim_lean_run(L, v, n, at, state, pt_alloc_plain,
				     pt_free_plain, pt_free_requested_plain,
				     pt_free_now_plain, false, false);
	return msim_lean_run(L, v, n, at, state, pt_alloc, pt_free,
			     pt_free_requested, pt_free_now, false, false);
}

static int
pt_empty_cache(void *state)
{
	return msim_pt_release_cached(state);
}

static void
pt_destroy(void *state)
{
	pt_state_t *s = state;
	if (!s)
		return;
	for (size_t i = 0; i < s->nstreams; i++)
		free(s->streams[i]);
	free(s->streams);
	for (size_t i = 0; i < s->nppools; i++)
		msim_pt_ppool_destroy(s->ppools[i]);
	free(s->ppools);
	free(s->captures);
	free(s->held);
	free(s->live);
	while (s->xsegs) {
		pt_xseg_t *next = s->xsegs->next;
		free(s->xsegs);
		s->xsegs = next;
	}
	while (s->slabs) {
		pt_slab_t *next = s->slabs->next;
		free(s->slabs);
		s->slabs = next;
	}
	free(s);
}

const msim_policy_ops_t msim_policy_pytorch = {
	.name = "pytorch",
	.summary = "PyTorch 2.11 CUDA caching allocator (native backend), "
		   "exact",
	.params = msim_pt_params,
	.create = msim_pt_create,
	.alloc = pt_alloc,
	.free = pt_free,
	.free_requested = pt_free_requested,
	.free_now = pt_free_now,
	.serve = pt_serve,
	.empty_cache = pt_empty_cache,
	.pool = msim_pt_pool,
	.would_release = msim_pt_would_release,
	.stats = msim_pt_stats,
	.sample = msim_pt_sample,
	.free_info = msim_pt_free_info,
	.blocks = msim_pt_blocks,
	.destroy = pt_destroy,
};
