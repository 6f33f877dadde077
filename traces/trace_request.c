/*
 * The request stage of traces: recorded entries become requests.  It is
 * where replay semantics live, once for every format
 * (docs/pytorch-allocator.md §11): `alloc` rows are requests of `size`
 * bytes, `free_completed` rows return the block; `free_requested` rows are
 * checked and, with deferred frees on, passed on; `segment_alloc` rows are
 * passed on as address hints; an `oom` row is a malloc that raised
 * out-of-memory (size = the rounded request), replayed as such.  With
 * hidden_empty_cache on, runs of segment_free / segment_unmap rows become
 * empty_cache() calls (rule a) or flag the next malloc (rule b); this needs
 * one entry of look-ahead, kept in t->la.
 */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "sim/error.h"
#include "traces/trace_int.h"

/* Turns entry e into a request: 1, 0 if e is not one, or an error. */
static int
trace_request(msim_trace_t *t, const msim_entry_t *e, msim_req_t *req)
{
	int rc;
	memset(req, 0, sizeof(*req));
	req->time = msim_trace_time(t, e->time_us);
	req->stream = e->stream;
	req->addr = e->addr;
	switch (e->action) {
	case MSIM_ACT_ALLOC:
		if (e->size == 0)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "alloc of 0 bytes");
		if (e->addr == 0)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "alloc at address 0");
		rc = msim_idmap_add(&t->ids, e->addr, &req->id);
		if (rc == MSIM_EINVAL)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "alloc at address 0x%llx, which "
					       "is still live",
					       (unsigned long long)e->addr);
		if (rc)
			return msim_trace_fail(t, rc, "%s", msim_strerror(rc));
		req->kind = MSIM_REQ_ALLOC;
		req->size = e->size;
		req->tag = e->tag;
		return 1;
	case MSIM_ACT_FREE_COMPLETED:
	case MSIM_ACT_FREE_REQUESTED: {
		bool completed = e->action == MSIM_ACT_FREE_COMPLETED;
		rc = completed ? msim_idmap_remove(&t->ids, e->addr, &req->id)
			       : msim_idmap_find(&t->ids, e->addr, &req->id);
		if (rc == MSIM_ENOTFOUND && t->lazy_seed && e->addr) {
			/* No first pass: the block was allocated before the
			 * history began; allocate it now, then free it. */
			if ((rc = msim_idmap_add(&t->ids, e->addr, &req->id)))
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			msim_trace_seed_inexact(t, "without a first pass over the file, "
				     "blocks are seeded where their free is "
				     "met");
			t->seed.from_frees++;
			t->seed.late++;
			t->seed.requests++;
			t->seed.bytes += e->size;
			req->kind = MSIM_REQ_ALLOC;
			req->size = e->size ? e->size : SEED_MIN_BLOCK;
			req->flags = MSIM_REQF_SEED;
			t->la = *e;
			t->have_la = true;
			return 1;
		}
		if (rc == MSIM_ENOTFOUND)
			return msim_trace_fail(t, MSIM_EFORMAT,
					       "%s of unknown address 0x%llx "
					       "(the history began after it "
					       "was allocated%s)",
					       msim_action_name(e->action),
					       (unsigned long long)e->addr,
					       t->opt.strict
					       ? "; without --strict it is "
						 "seeded at the start"
					       : "");
		if (rc)
			return msim_trace_fail(t, rc, "%s", msim_strerror(rc));
		if (!completed && !t->opt.deferred_frees)
			return 0;
		req->kind = completed ? MSIM_REQ_FREE : MSIM_REQ_FREE_REQUESTED;
		return 1;
	}
	case MSIM_ACT_SEGMENT_ALLOC:
		req->kind = MSIM_REQ_SEGMENT_HINT;
		req->size = e->size;
		return 1;
	case MSIM_ACT_SEGMENT_MAP:
		/* Expandable segments: the first map of a reservation is at
		 * its base, the address of the VA range reserved; later maps
		 * of it lie between its base and its mapped end. */
		for (size_t i = 0; i < t->nresv; i++) {
			uint64_t *r = t->resv[i];
			if (e->addr >= r[0] && e->addr <= r[1]) {
				if (e->addr + e->size > r[1])
					r[1] = e->addr + e->size;
				return 0;
			}
		}
		if (msim_trace_seed_grow((void **)&t->resv, &t->capresv, t->nresv,
			      sizeof(*t->resv)))
			return msim_trace_fail(t, MSIM_ENOMEM, "%s",
					       msim_strerror(MSIM_ENOMEM));
		t->resv[t->nresv][0] = e->addr;
		t->resv[t->nresv++][1] = e->addr + e->size;
		req->kind = MSIM_REQ_SEGMENT_HINT;
		req->size = e->size;
		return 1;
	case MSIM_ACT_OOM:
		if (e->size == 0)
			return msim_trace_fail(t, MSIM_EFORMAT, "oom of 0 bytes");
		if ((rc = msim_idmap_take_id(&t->ids, &req->id)))
			return msim_trace_fail(t, rc, "%s", msim_strerror(rc));
		t->pending_id = true;
		t->oom_id = req->id;
		req->kind = MSIM_REQ_ALLOC;
		req->flags = MSIM_REQF_EXPECT_OOM;
		req->size = e->size;
		req->tag = e->tag;
		req->addr = 0;
		return 1;
	case MSIM_ACT_POOL_CREATE:
	case MSIM_ACT_POOL_BEGIN:
	case MSIM_ACT_POOL_END:
	case MSIM_ACT_POOL_RELEASE:
	case MSIM_ACT_POOL_RESTORE: {
		char why[160];
		if (msim_pool_request(e->action, e->addr, e->size, req, why,
				      sizeof(why)))
			return msim_trace_fail(t, MSIM_EFORMAT, "%s", why);
		return 1;
	}
	case MSIM_ACT_EMPTY_CACHE:
		/* torch.cuda.empty_cache() where the program called it. */
		req->kind = MSIM_REQ_EMPTY_CACHE;
		req->addr = 0;
		return 1;
	case MSIM_ACT_RESET_PEAKS:
		/* After a seeded start written out (memsim convert). */
		req->kind = MSIM_REQ_RESET_PEAKS;
		req->addr = 0;
		req->size = 0;
		return 1;
	default: /* what the allocator did, or annotations */
		return 0;
	}
}

int
msim_trace_next(msim_trace_t *t, msim_req_t *req_out)
{
	if (t->pending_id) {
		t->pending_id = false;
		if (msim_idmap_put_id(&t->ids, t->oom_id))
			return MSIM_ENOMEM;
	}
	if (!t->prescanned) {
		int rc = msim_trace_prescan(t);
		if (rc)
			return rc;
	}
	if (t->seedpos < t->nseedq) {
		*req_out = t->seedq[t->seedpos++];
		if (req_out->kind != MSIM_REQ_SEGMENT_HINT &&
		    req_out->kind != MSIM_REQ_RESET_PEAKS)
			t->requests++;
		return 1;
	}
	for (;;) {
		if (t->pqpos < t->npq) {
			*req_out = t->pq[t->pqpos++];
			t->requests++;
			return 1;
		}
		msim_entry_t e;
		int rc;
		if (t->have_la) {
			e = t->la;
			t->have_la = false;
		} else if ((rc = msim_trace_next_entry(t, &e)) != 1) {
			if (rc == 0 && t->in_call) {
				/* An empty_cache row near the end. */
				t->in_call = t->in_run = false;
				goto empty_cache;
			}
			if (rc == 0 && t->in_run) {
				/* Segments freed at the very end: an
				 * empty_cache() (or the final cleanup). */
				t->in_run = false;
				t->empty_caches++;
				goto empty_cache;
			}
			return rc;
		}
		if (e.action == MSIM_ACT_EMPTY_CACHE && (e.addr || e.size))
			return msim_trace_fail(t, MSIM_EFORMAT, "empty_cache "
					       "with addr %llu and size %llu "
					       "(both are 0; a MemPool's "
					       "emptyCache is a pool_release "
					       "of size 1)",
					       (unsigned long long)e.addr,
					       (unsigned long long)e.size);
		if (t->npools && (rc = msim_trace_pool_derive(t, &e, true)) != 0) {
			if (rc < 0)
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			continue;
		}
		/* The segment_free rows right after ~MemPool's pool_release
		 * (snapshot rows aside) are its emptyCache(pool)'s, which the
		 * policy does at that row: no empty_cache() of their own. */
		bool pool_run = false;
		if (e.action == MSIM_ACT_POOL_RELEASE)
			t->pool_emptying = e.size == 1;
		else if (e.action == MSIM_ACT_SEGMENT_FREE ||
			 e.action == MSIM_ACT_SEGMENT_UNMAP)
			pool_run = t->pool_emptying;
		else if (e.action != MSIM_ACT_SNAPSHOT)
			t->pool_emptying = false;
		/* A run of segment_free / segment_unmap rows: an empty_cache()'s
		 * (the call of the row before it, or a hidden one), decided by
		 * the row after it (below). */
		if (t->opt.hidden_empty_cache && (t->in_call || !pool_run) &&
		    (e.action == MSIM_ACT_SEGMENT_FREE ||
		     e.action == MSIM_ACT_SEGMENT_UNMAP)) {
			t->in_run = true;
			t->run_time_us = e.time_us;
			continue;
		}
		if (t->opt.hidden_empty_cache && t->in_call) {
			/* After an empty_cache row: synchronize_and_free_events'
			 * free_completed rows, then release_cached_blocks'
			 * segment_free / segment_unmap rows (§3.5).  The call
			 * is replayed once, at the end of them, whatever comes
			 * next (no rule b). */
			switch (e.action) {
			case MSIM_ACT_FREE_COMPLETED:
				if (t->in_run)
					break;
				/* An event synchronised by the call. */
				goto request;
			case MSIM_ACT_SNAPSHOT:
			case MSIM_ACT_ANNOTATE:
			case MSIM_ACT_USER_DEFINED:
				continue;
			default:
				break;
			}
			t->in_call = t->in_run = false;
			t->la = e;
			t->have_la = true;
			goto empty_cache;
		}
		if (t->opt.hidden_empty_cache && !pool_run) {
			switch (e.action) {
			case MSIM_ACT_EMPTY_CACHE:
				if (!t->in_run) {
					t->in_call = true;
					t->run_time_us = e.time_us;
					continue;
				}
				/* A run before it is a call of its own. */
				/* fall through */
			case MSIM_ACT_ALLOC:
			case MSIM_ACT_FREE_REQUESTED:
			case MSIM_ACT_FREE_COMPLETED:
				if (!t->in_run)
					break;
				/* Rule a: the run was an empty_cache(). */
				t->in_run = false;
				t->empty_caches++;
				t->la = e;
				t->have_la = true;
				goto empty_cache;
			case MSIM_ACT_SEGMENT_ALLOC:
			case MSIM_ACT_SEGMENT_MAP:
			case MSIM_ACT_OOM:
				if (!t->in_run)
					break;
				/* Rule b: the next malloc's, or not. */
				t->in_run = false;
				t->maybe_empty_caches++;
				t->next_flags |= MSIM_REQF_MAYBE_EMPTY_CACHE;
				break;
			default:
				break;
			}
		}
		if (t->npools && (rc = msim_trace_pool_derive(t, &e, false)) != 0) {
			if (rc < 0)
				return msim_trace_fail(t, rc, "%s",
						       msim_strerror(rc));
			continue;
		}
request:
		if ((rc = trace_request(t, &e, req_out)) < 0)
			return rc;
		if (rc == 0)
			continue;
		if (req_out->kind == MSIM_REQ_ALLOC) {
			req_out->flags |= t->next_flags;
			t->next_flags = 0;
		}
		if (req_out->kind != MSIM_REQ_SEGMENT_HINT &&
		    req_out->kind != MSIM_REQ_RESET_PEAKS)
			t->requests++;
		return 1;
	}
empty_cache:
	memset(req_out, 0, sizeof(*req_out));
	req_out->kind = MSIM_REQ_EMPTY_CACHE;
	req_out->time = msim_trace_time(t, t->run_time_us);
	t->requests++;
	return 1;
}

void
msim_trace_empty_caches(const msim_trace_t *t, uint64_t *found_out,
			uint64_t *maybe_out)
{
	*found_out = t->empty_caches;
	*maybe_out = t->maybe_empty_caches;
}

int
msim_trace_segments(msim_trace_t *t, const msim_snap_segment_t **segs_out,
		    size_t *n_out)
{
	*segs_out = NULL;
	*n_out = 0;
	if (!t->format->segments || !t->fmt)
		return 0;
	return t->format->segments(t, segs_out, n_out);
}

int
msim_trace_fill(msim_trace_t *t, msim_req_t *v, size_t cap, size_t *n_out)
{
	int rc = 1;
	*n_out = 0;
	if (t->fast == 0) {
		/* The format's own stage: for a plain replay of a file read
		 * from its start, with no blocks seeded before it. */
		if ((rc = msim_trace_prescan(t)))
			return rc;
		t->fast = t->format->requests && !t->opt.hidden_empty_cache &&
			  !t->opt.all_devices && !t->entries && !t->have_la &&
			  !t->nseedq ? 1 : -1;
	}
	if (t->fast == 1) {
		rc = t->format->requests(t, v, cap, n_out);
		if (rc == 0)
			msim_trace_end(t);
		if (rc != MSIM_ENOTSUP)
			return rc;
		t->fast = -1; /* nothing read: entry by entry */
	}
	size_t n = 0;
	while (n < cap && (rc = msim_trace_next(t, &v[n])) == 1)
		n++;
	*n_out = n;
	return n == cap ? 1 : rc;
}

static int
trace_src_fill(void *ctx, msim_req_t *v, size_t cap, size_t *n_out)
{
	return msim_trace_fill(ctx, v, cap, n_out);
}

static int
trace_src_next(void *ctx, msim_req_t *req_out)
{
	return msim_trace_next(ctx, req_out);
}

static const char *
trace_src_errmsg(void *ctx)
{
	return msim_trace_errmsg(ctx);
}

msim_source_t
msim_trace_source(msim_trace_t *t)
{
	return (msim_source_t){.next = trace_src_next,
			       .errmsg = trace_src_errmsg, .ctx = t,
			       .fill = trace_src_fill};
}

int
msim_pool_request(int action, uint64_t addr, uint64_t size, msim_req_t *req,
		  char *why, size_t whylen)
{
	if (addr == 0) {
		snprintf(why, whylen, "%s of pool 0 (the default pool has no "
			 "id)", msim_action_name(action));
		return MSIM_EFORMAT;
	}
	if (action == MSIM_ACT_POOL_CREATE && size > 7) {
		snprintf(why, whylen, "pool_create size %llu is not a sum of "
			 "flags 1 (an allocator of its own), 2 (use_on_oom), 4 "
			 "(no_split)", (unsigned long long)size);
		return MSIM_EFORMAT;
	}
	if (action == MSIM_ACT_POOL_RELEASE && size > 1) {
		snprintf(why, whylen, "pool_release size %llu is not 0 or 1 "
			 "(the MemPool's death)", (unsigned long long)size);
		return MSIM_EFORMAT;
	}
	if (action == MSIM_ACT_POOL_CREATE)
		req->flags = (uint8_t)((size & 1 ? MSIM_REQF_OWN_ALLOC : 0) |
				       (size & 2 ? MSIM_REQF_USE_ON_OOM : 0) |
				       (size & 4 ? MSIM_REQF_NO_SPLIT : 0));
	/* pool_restore's: the number of placed allocs after it. */
	if (action == MSIM_ACT_POOL_RESTORE)
		req->size = size;
	if (action == MSIM_ACT_POOL_RELEASE && size == 1)
		req->flags = MSIM_REQF_EMPTY_POOL;
	req->kind = (uint8_t)(MSIM_REQ_POOL_CREATE +
			      (action - MSIM_ACT_POOL_CREATE));
	return 0;
}
