/*
 * What the engine reads of the pytorch policy's state, without side
 * effects: its statistics (PyTorch's DeviceStats), the timeline's sample,
 * the free blocks, every block (for snapshots and plots), and whether a
 * malloc would release cached segments (explain).  The policy itself is
 * policies/pytorch.c.
 */
#include <config.h>

#include "policies/pytorch_int.h"
#include "sim/error.h"

/* The stream state a request on handle would use, or NULL if it never
 * allocated there (no side effects). */
static pt_stream_t *
pt_stream_find(const pt_state_t *s, msim_stream_t handle)
{
	const pt_capture_t *c = s->ncaptures ? capture_of(s, handle) : NULL;
	const pt_ppool_t *pp = c ? ppool_find(s, c->pool) : NULL;
	pt_stream_t *const *v = pp ? pp->streams : s->streams;
	size_t n = pp ? pp->nstreams : s->nstreams;
	for (size_t i = 0; i < n; i++)
		if (v[i]->handle == handle)
			return v[i];
	return NULL;
}

/* Whether a malloc of req now would free cached segments itself: the
 * lookup misses and GC, the cap or the device forces a release
 * (docs/pytorch-allocator.md §11.2 b).  Evaluated without side effects. */
bool
msim_pt_would_release(const void *state, const msim_req_t *req)
{
	const pt_state_t *s = state;
	uint64_t size = pt_round(s, req->size, false);
	int pool = size <= PT_SMALL_SIZE ? PT_SMALL : PT_LARGE;
	const pt_stream_t *st = pt_stream_find(s, req->stream);
	if (st) {
		const pt_block_t *b = fs_lower_bound(&st->fs[pool], size);
		bool refused = b && ((size < s->max_split &&
				      b->size >= s->max_split) ||
				     (size >= s->max_split &&
				      b->size >= size + s->nonsplit_tol));
		if (b && !refused)
			return false;
	}
	uint64_t seg_size = pt_segment_size(s, size);
	if (s->gc_enabled &&
	    s->total_allocated > (uint64_t)(s->gc_threshold * (double)s->cap)) {
		for (size_t i = 0; i < s->nstreams; i++) {
			const pt_freeset_t *fs = &s->streams[i]->fs[PT_LARGE];
			for (const pt_block_t *b = fs_first(fs); b;
			     b = fs_next(fs, b))
				if (!blk_is_split(b))
					return true;
		}
	}
	if (!(s->cap && s->total_allocated + seg_size > s->cap) &&
	    seg_size <= msim_device_avail(s->dev))
		return false;
	/* A use_on_oom pool's cached block serves it before any release
	 * (try_mempool_fallback()). */
	if (s->ncaptures && capture_of(s, req->stream))
		return true;
	for (size_t i = 0; i < s->nppools; i++) {
		const pt_ppool_t *pp = s->ppools[i];
		if (!fallback_pool(pp))
			continue;
		for (size_t j = 0; j < pp->nstreams; j++) {
			if (pp->streams[j]->handle != req->stream)
				continue;
			const pt_block_t *b =
				fs_lower_bound(&pp->streams[j]->fs[pool], size);
			if (b && !((size < s->max_split &&
				    b->size >= s->max_split) ||
				   (size >= s->max_split &&
				    b->size >= size + s->nonsplit_tol)))
				return false;
		}
	}
	return true;
}

void
msim_pt_stats(const void *state, msim_stats_t *out)
{
	const pt_state_t *s = state;
	*out = s->st;
	/* active and active_bytes: allocated's plus the pending blocks
	 * (pt_active_peak()); freed by free_block(), those of allocated's
	 * freed that are not pending. */
	for (int x = 0; x < MSIM_NPOOL; x++) {
		msim_stat_t *a = &out->active[x], *ab = &out->active_bytes[x];
		const msim_stat_t *n = &out->allocation[x];
		const msim_stat_t *nb = &out->allocated_bytes[x];
		a->current = n->current + s->pend_n[x];
		ab->current = nb->current + s->pend_bytes[x];
		if (n->peak > a->peak)
			a->peak = n->peak;
		if (nb->peak > ab->peak)
			ab->peak = nb->peak;
		if (x != MSIM_POOL_ALL) {
			a->freed = n->freed - s->pend_n[x];
			ab->freed = nb->freed - s->pend_bytes[x];
		}
	}
	/* The "all" copies' freed counts (pt_stat_dec()). */
#define XX(name)                                                      \
	out->name[MSIM_POOL_ALL].freed = out->name[MSIM_POOL_SMALL].freed + \
					 out->name[MSIM_POOL_LARGE].freed;
	MSIM_STAT_ARRAYS(XX)
#undef XX
	out->max_split_size =
		s->max_split == PT_UNLIMITED ? -1 : (int64_t)s->max_split;
}

void
msim_pt_sample(const void *state, int64_t *allocated_out,
	       int64_t *active_out, int64_t *requested_out)
{
	const pt_state_t *s = state;
	*allocated_out = s->st.allocated_bytes[MSIM_POOL_ALL].current;
	*active_out = *allocated_out + s->pend_bytes[MSIM_POOL_ALL];
	*requested_out = s->st.requested_bytes[MSIM_POOL_ALL].current;
}

void
msim_pt_free_info(const void *state, uint64_t *largest_out,
		  uint64_t *total_out)
{
	const pt_state_t *s = state;
	uint64_t largest = 0;
	for (size_t p = 0; p <= s->nppools; p++) {
		pt_stream_t *const *v = p ? s->ppools[p - 1]->streams
					  : s->streams;
		size_t n = p ? s->ppools[p - 1]->nstreams : s->nstreams;
		for (size_t i = 0; i < n; i++) {
			for (int pool = 0; pool < 2; pool++) {
				const pt_block_t *b =
					fs_prev(&v[i]->fs[pool], NULL);
				if (b && b->size > largest)
					largest = b->size;
			}
		}
	}
	*largest_out = largest;
	*total_out = s->free_bytes;
}

/* Every mapped block: the live ones by id, the free ones set by set. */
void
msim_pt_blocks(const void *state,
	       void (*fn)(void *ctx, const msim_block_t *b), void *ctx)
{
	const pt_state_t *s = state;
	for (size_t id = 0; id < s->nlive; id++) {
		const pt_block_t *b = s->live[id];
		if (b)
			fn(ctx, &(msim_block_t){b->ptr, b->size,
						b->state == B_ALLOC
						? MSIM_BLOCK_ALLOCATED
						: MSIM_BLOCK_PENDING});
	}
	for (size_t i = 0; i < s->nheld; i++)
		fn(ctx, &(msim_block_t){s->held[i]->ptr, s->held[i]->size,
					MSIM_BLOCK_PENDING});
	for (size_t p = 0; p <= s->nppools; p++) {
		pt_stream_t *const *v = p ? s->ppools[p - 1]->streams
					  : s->streams;
		size_t n = p ? s->ppools[p - 1]->nstreams : s->nstreams;
		for (size_t i = 0; i < n; i++)
			for (int pool = 0; pool < 2; pool++) {
				const pt_freeset_t *fs = &v[i]->fs[pool];
				for (const pt_block_t *b = fs_first(fs); b;
				     b = fs_next(fs, b))
					fn(ctx, &(msim_block_t){
						b->ptr, b->size,
						MSIM_BLOCK_FREE});
			}
	}
}
