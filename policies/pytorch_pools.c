/*
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
 * This file: the pools' lifecycle (ops->pool) and release_cached_blocks(),
 * which empties them; the allocation paths that use them
 * (get_pool(), try_mempool_fallback(), the checkpoint restore) are in
 * policies/pytorch.c.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "policies/pytorch_int.h"
#include "sim/error.h"

/* Whether a private pool holds nothing any more. */
static bool
ppool_empty(const pt_ppool_t *pp)
{
	if (pp->nmalloc > 0 || pp->nlive > 0)
		return false;
	for (size_t i = 0; i < pp->nstreams; i++)
		for (int k = 0; k < 2; k++)
			if (fs_first(&pp->streams[i]->fs[k]) ||
			    pp->streams[i]->unmapped[k])
				return false;
	return true;
}

void
msim_pt_ppool_destroy(pt_ppool_t *pp)
{
	for (size_t i = 0; i < pp->nstreams; i++)
		free(pp->streams[i]);
	free(pp->streams);
	free(pp);
}

/* release_blocks() of freeable private pool i, small then large; the pool
 * is gone once it holds nothing.  Returns 0 or MSIM_ENOMEM; *gone_out says
 * whether it went. */
static int
release_ppool(pt_state_t *s, size_t i, bool *gone_out)
{
	pt_ppool_t *pp = s->ppools[i];
	int rc = msim_pt_release_streams(s, pp->streams, pp->nstreams,
					 PT_SMALL);
	if (!rc)
		rc = msim_pt_release_streams(s, pp->streams, pp->nstreams,
					     PT_LARGE);
	*gone_out = !rc && ppool_empty(pp);
	if (*gone_out) {
		if (s->restore_pp == pp) {
			s->restore_pp = NULL;
			s->restore_left = 0;
		}
		msim_pt_ppool_destroy(pp);
		memmove(&s->ppools[i], &s->ppools[i + 1],
			(s->nppools - i - 1) * sizeof(*s->ppools));
		s->nppools--;
	}
	return rc;
}

/* release_cached_blocks(): empty_cache and the OOM retry.  The default
 * pool's large then small blocks, then each freeable private pool's small
 * then large; a freeable pool with no segment left is gone. */
int
msim_pt_release_cached(pt_state_t *s)
{
	s->fr_last = NULL;
	if (s->nheld && !s->ncaptures)
		msim_pt_release_held(s);
	s->st.num_sync_all_streams++;
	int rc = msim_pt_release_streams(s, s->streams, s->nstreams, PT_LARGE);
	if (!rc)
		rc = msim_pt_release_streams(s, s->streams, s->nstreams,
					     PT_SMALL);
	for (size_t i = 0; !rc && i < s->nppools;) {
		bool gone = false;
		if (s->ppools[i]->freeable)
			rc = release_ppool(s, i, &gone);
		if (!gone)
			i++;
	}
	return rc;
}

/* emptyCache(mempool_id), which ~MemPool calls after releasePool:
 * release_cached_blocks() of that pool alone if it is freeable
 * (synchronize_and_free_events() of its events, then its blocks; the
 * default pool is not touched); nothing otherwise. */
static int
empty_pool(pt_state_t *s, const pt_ppool_t *pp)
{
	if (!pp->freeable)
		return 0;
	if (s->nheld && !s->ncaptures)
		msim_pt_release_held(s);
	s->st.num_sync_all_streams++;
	for (size_t i = 0; i < s->nppools; i++) {
		bool gone;
		if (s->ppools[i] == pp)
			return release_ppool(s, i, &gone);
	}
	return 0;
}

/* createOrIncrefPool (with MemPool's setUseOnOOM and setNoSplit),
 * beginAllocateToPool, endAllocateToPool, releasePool and
 * setCheckpointPoolState: the pool id is req->addr. */
int
msim_pt_pool(void *state, const msim_req_t *req)
{
	pt_state_t *s = state;
	uint64_t id = req->addr;
	pt_ppool_t *pp = ppool_find(s, id);
	s->fr_last = NULL;
	switch (req->kind) {
	case MSIM_REQ_POOL_CREATE:
	case MSIM_REQ_POOL_BEGIN:
		if (req->kind == MSIM_REQ_POOL_BEGIN) {
			for (size_t i = 0; i < s->ncaptures; i++)
				if (s->captures[i].pool == id)
					return MSIM_EINVAL; /* already */
			if (s->ncaptures == s->capcaptures) {
				size_t n = s->capcaptures ? 2 * s->capcaptures
							  : 4;
				pt_capture_t *v = realloc(s->captures,
							  n * sizeof(*v));
				if (!v)
					return MSIM_ENOMEM;
				s->captures = v;
				s->capcaptures = n;
			}
		}
		/* create_or_incref_pool(): a pool freeable already cannot
		 * be shared (its use count is 0), and only a new pool takes
		 * an allocator (or MemPool's flags: a MemPool's id is new). */
		if (pp && (pp->use_count == 0 ||
			   (req->flags & (MSIM_REQF_OWN_ALLOC |
					  MSIM_REQF_USE_ON_OOM |
					  MSIM_REQF_NO_SPLIT))))
			return MSIM_EINVAL;
		if (pp) {
			pp->use_count++;
		} else {
			pt_ppool_t **v = realloc(s->ppools, (s->nppools + 1) *
							     sizeof(*v));
			if (!v)
				return MSIM_ENOMEM;
			s->ppools = v;
			if (!(pp = calloc(1, sizeof(*pp))))
				return MSIM_ENOMEM;
			pp->id = id;
			pp->use_count = 1;
			pp->own_alloc = req->flags & MSIM_REQF_OWN_ALLOC;
			pp->use_on_oom = req->flags & MSIM_REQF_USE_ON_OOM;
			pp->no_split = req->flags & MSIM_REQF_NO_SPLIT;
			s->ppools[s->nppools++] = pp;
		}
		if (req->kind == MSIM_REQ_POOL_BEGIN)
			s->captures[s->ncaptures++] =
				(pt_capture_t){id, req->stream};
		return 0;
	case MSIM_REQ_POOL_END:
		for (size_t i = 0; i < s->ncaptures; i++) {
			if (s->captures[i].pool == id) {
				memmove(&s->captures[i], &s->captures[i + 1],
					(s->ncaptures - i - 1) *
					sizeof(*s->captures));
				s->ncaptures--;
				return 0;
			}
		}
		return MSIM_EINVAL; /* not currently recording to it */
	case MSIM_REQ_POOL_RELEASE:
		if (!pp || pp->use_count == 0)
			return MSIM_EINVAL;
		if (--pp->use_count == 0)
			pp->freeable = true;
		if (req->flags & MSIM_REQF_EMPTY_POOL) {
			/* ~MemPool: setUseOnOOM(false), releasePool,
			 * emptyCache(pool). */
			pp->use_on_oom = false;
			return empty_pool(s, pp);
		}
		return 0;
	case MSIM_REQ_POOL_RESTORE:
		/* setCheckpointPoolState() of a live pool: the allocs that
		 * follow are placed (restore_alloc()). */
		if (!pp || pp->freeable)
			return MSIM_EINVAL;
		s->restore_pp = req->size ? pp : NULL;
		s->restore_left = req->size;
		s->restore_have_delta = false;
		return 0;
	default:
		return MSIM_EINVAL;
	}
}
