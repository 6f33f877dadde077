/*
 * Partial histories (msim_trace_seeding()): a recording that begins after
 * the program did (a snapshot's end state, or lost oldest rows) is seeded
 * with the requests that rebuild its start, and a snapshot's private
 * pools are derived from its segments.  The request stage
 * (trace_request.c) serves the seeded requests first.
 */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "sim/error.h"
#include "traces/trace_int.h"

/* ---- partial histories: seeding the start (see msim_trace_seeding()) ---- */

/* PyTorch's CUDACachingAllocator constants: kSmallSize (the largest
 * small-pool request; a large free block is split only if more than this
 * remains) and kSmallBuffer (the size of a small segment); kMinBlockSize
 * is SEED_MIN_BLOCK (trace_int.h). */
#define SEED_SMALL_SIZE (UINT64_C(1) << 20)
#define SEED_SMALL_BUFFER (UINT64_C(2) << 20)

typedef struct seed_blk_s {
	uint64_t addr, size, block; /* block: its size in the snapshot, 0 if
				     * unknown */
	msim_stream_t stream;
	uint16_t tag; /* the site of its snapshot frames (t's table), 0: none */
} seed_blk_t;

typedef struct seed_seg_s {
	uint64_t addr, size;
	msim_stream_t stream;
	bool large;
	uint32_t pool; /* its private pool (msim_trace_pool_derive()), 0: default */
} seed_seg_t;

typedef struct seed_build_s {
	seed_blk_t *b;
	size_t nb, capb;
	seed_seg_t *g;
	size_t ng, capg;
	uint32_t *fill; /* filler ids to free once all is built */
	size_t nfill, capfill;
} seed_build_t;

int
msim_trace_seed_grow(void **a, size_t *cap, size_t n, size_t each)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? 2 * *cap : 64;
	void *p = realloc(*a, c * each);
	if (!p)
		return MSIM_ENOMEM;
	*a = p;
	*cap = c;
	return 0;
}

static int
seed_add_blk(seed_build_t *s, uint64_t addr, uint64_t size, uint64_t block,
	     msim_stream_t stream, uint16_t tag)
{
	if (msim_trace_seed_grow((void **)&s->b, &s->capb, s->nb, sizeof(*s->b)))
		return MSIM_ENOMEM;
	s->b[s->nb++] = (seed_blk_t){addr, size, block, stream, tag};
	return 0;
}

static int
seed_add_seg(seed_build_t *s, uint64_t addr, uint64_t size,
	     msim_stream_t stream, bool large, uint32_t pool)
{
	if (msim_trace_seed_grow((void **)&s->g, &s->capg, s->ng, sizeof(*s->g)))
		return MSIM_ENOMEM;
	s->g[s->ng++] = (seed_seg_t){addr, size, stream, large, pool};
	return 0;
}

static int
seed_blk_cmp(const void *a, const void *b)
{
	const seed_blk_t *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int
seed_seg_cmp(const void *a, const void *b)
{
	const seed_seg_t *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static uint64_t
seed_round(uint64_t size)
{
	/* round_size(): at least kMinBlockSize, else a multiple of it. */
	return size < SEED_MIN_BLOCK ? SEED_MIN_BLOCK
	       : (size + SEED_MIN_BLOCK - 1) / SEED_MIN_BLOCK * SEED_MIN_BLOCK;
}

void
msim_trace_seed_inexact(msim_trace_t *t, const char *why)
{
	if (t->seed.exact) {
		t->seed.exact = false;
		t->seed.inexact = why;
	}
}

static int
seed_push_tag(msim_trace_t *t, int kind, uint32_t id, uint64_t addr,
	      uint64_t size, msim_stream_t stream, uint8_t flags, uint16_t tag)
{
	if (msim_trace_seed_grow((void **)&t->seedq, &t->capseedq, t->nseedq,
		      sizeof(*t->seedq)))
		return MSIM_ENOMEM;
	t->seedq[t->nseedq++] = (msim_req_t){
		.kind = (uint8_t)kind, .id = id, .addr = addr, .size = size,
		.stream = stream, .flags = flags, .tag = tag};
	if (kind != MSIM_REQ_SEGMENT_HINT && kind != MSIM_REQ_RESET_PEAKS &&
	    (kind < MSIM_REQ_POOL_CREATE || kind > MSIM_REQ_POOL_RESTORE))
		t->seed.requests++;
	return 0;
}

static int
seed_push(msim_trace_t *t, int kind, uint32_t id, uint64_t addr,
	  uint64_t size, msim_stream_t stream, uint8_t flags)
{
	return seed_push_tag(t, kind, id, addr, size, stream, flags, 0);
}

/* Fillers for the free bytes [at, at + n) of a segment being rebuilt:
 * blocks of the pool the segment belongs to (small: at most kSmallSize
 * each). */
static int
seed_fill(msim_trace_t *t, seed_build_t *s, const seed_seg_t *g, uint64_t n)
{
	bool chunks = !g->large && n <= SEED_SMALL_BUFFER;
	if (!g->large && !chunks)
		msim_trace_seed_inexact(t, "a small segment larger than 2 MiB");
	while (n) {
		uint64_t k = n;
		if (chunks && k > SEED_SMALL_SIZE)
			k = SEED_SMALL_SIZE;
		uint32_t id;
		int rc;
		if ((rc = msim_idmap_take_id(&t->ids, &id)) ||
		    (rc = msim_trace_seed_grow((void **)&s->fill, &s->capfill, s->nfill,
				    sizeof(*s->fill))) ||
		    (rc = seed_push(t, MSIM_REQ_ALLOC, id, 0, k, g->stream,
				    MSIM_REQF_FILLER)))
			return rc;
		s->fill[s->nfill++] = id;
		t->seed.fillers++;
		n -= k;
	}
	return 0;
}

/* The allocation of seeded block b. */
static int
seed_alloc(msim_trace_t *t, const seed_blk_t *b, uint64_t size)
{
	uint32_t id;
	int rc = msim_idmap_add(&t->ids, b->addr, &id);
	if (rc == MSIM_EINVAL)
		return 0; /* seeded twice: once is enough */
	if (rc)
		return rc;
	t->seed.bytes += b->size;
	return seed_push_tag(t, MSIM_REQ_ALLOC, id, b->addr, size, b->stream,
			     MSIM_REQF_SEED, b->tag);
}

/* Rebuilds segment g with the seeded blocks b[0..n) inside it. */
static int
seed_segment(msim_trace_t *t, seed_build_t *s, const seed_seg_t *g,
	     const seed_blk_t *b, size_t n)
{
	int rc;
	uint64_t end = g->addr + g->size, at = g->addr;
	t->seed.segments++;
	t->seed.segment_bytes += g->size;
	/* A private pool's segment is rebuilt inside that pool. */
	if (g->pool && (rc = seed_push(t, MSIM_REQ_POOL_BEGIN, 0, g->pool, 0,
				       g->stream, 0)))
		return rc;
	if ((rc = seed_push(t, MSIM_REQ_SEGMENT_HINT, 0, g->addr, g->size,
			    g->stream, 0)))
		return rc;
	if (g->large) {
		/* One malloc of the whole segment, given back: the segment
		 * is then one free block of its recorded size. */
		uint32_t id;
		if ((rc = msim_idmap_take_id(&t->ids, &id)) ||
		    (rc = seed_push(t, MSIM_REQ_ALLOC, id, 0, g->size,
				    g->stream, MSIM_REQF_FILLER)) ||
		    (rc = seed_push(t, MSIM_REQ_FREE, id, 0, 0, g->stream,
				    MSIM_REQF_FILLER)) ||
		    (rc = msim_idmap_put_id(&t->ids, id)))
			return rc;
		if (g->size <= 10 * SEED_SMALL_SIZE)
			msim_trace_seed_inexact(t, "a large segment of 10 MiB or less "
				     "cannot be rebuilt by one malloc");
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t used = b[i].block ? b[i].block : seed_round(b[i].size);
		uint64_t size = b[i].size;
		if (b[i].block && seed_round(size) != b[i].block)
			size = b[i].block; /* it kept a remainder too small
					    * to split */
		if (b[i].addr < at) {
			msim_trace_seed_inexact(t, "seeded blocks overlap");
			continue;
		}
		uint64_t gap = b[i].addr - at;
		if (g->large && gap && gap <= SEED_SMALL_SIZE) {
			/* Too small for a large-pool filler: the block
			 * before (or this one) takes it. */
			msim_trace_seed_inexact(t, "a free gap of 1 MiB or less in a "
				     "large segment was given to a block");
			size += gap;
			gap = 0;
		} else if ((rc = seed_fill(t, s, g, gap))) {
			return rc;
		}
		if ((rc = seed_alloc(t, &b[i], size)))
			return rc;
		at = b[i].addr + used;
	}
	if (at < end && (!g->large || end - at > SEED_SMALL_SIZE ||
			 n == 0) && (rc = seed_fill(t, s, g, end - at)))
		return rc;
	if (g->pool &&
	    ((rc = seed_push(t, MSIM_REQ_POOL_END, 0, g->pool, 0, g->stream,
			     0)) ||
	     (rc = seed_push(t, MSIM_REQ_POOL_RELEASE, 0, g->pool, 0,
			     g->stream, 0))))
		return rc;
	return 0;
}

/* ---- private pools of a snapshot ----
 *
 * A snapshot's segments name their pool (segment_pool_id); its trace
 * entries name none (PyTorch 2.11).  What can be derived: a segment of the
 * end state that is in a private pool was in it all its life (a block
 * never changes pools, and release_cached_blocks frees a segment only when
 * it is wholly free), so every alloc whose address lies in it once the
 * trace made it (or from the start, for a segment older than the history)
 * came from that pool, and so did the malloc behind its segment_alloc
 * row.  The replay gets the rows `memsim record --gpu` would have written
 * around them: each pool is created before anything (a reference held to
 * the end: its segments outlive the trace), a run of such allocs on a
 * stream is a pool_begin on that stream ... pool_end, pool_release, and
 * the runs end before an alloc of the default pool on that stream, before
 * a segment_free (empty_cache(), the OOM retry: release_cached_blocks is
 * skipped while a capture is underway) and before an oom entry.
 * What cannot be derived: the pool of a segment the trace frees (it is not
 * in the end state: its allocs replay in the default pool); when a pool
 * was released (its segments outlive the trace, so none of them was freed
 * by release_cached_blocks); a pool's use by allocs that reused no
 * segment of the end state.  Needs a first pass (a snapshot in a regular
 * file). */

static int
pseg_cmp(const void *a, const void *b)
{
	const struct msim_pseg_s *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The private segments of the end state g[0..ng), with the entry that
 * made each (segs: the trace's segments alive at its end, by address, and
 * segord their segment_alloc entries by id), into t->pseg. */
static int
pool_scan(msim_trace_t *t, const msim_snap_segment_t *g, size_t ng,
	  const msim_idmap_t *segs, const uint64_t *segord)
{
	size_t n = 0;
	for (size_t i = 0; i < ng; i++)
		n += g[i].pool != 0;
	if (!n)
		return 0;
	if (!(t->pseg = malloc(n * sizeof(*t->pseg))))
		return MSIM_ENOMEM;
	for (size_t i = 0; i < ng; i++) {
		if (!g[i].pool)
			continue;
		uint32_t id;
		struct msim_pseg_s *q = &t->pseg[t->npseg++];
		q->addr = g[i].addr;
		q->size = g[i].total_size;
		q->pool = g[i].pool;
		q->ord = msim_idmap_find(segs, g[i].addr, &id) ? 0
							       : segord[id];
		if (g[i].pool > t->npools)
			t->npools = g[i].pool;
	}
	qsort(t->pseg, t->npseg, sizeof(*t->pseg), pseg_cmp);
	/* Each pool is created first: a reference held to the end. */
	for (uint32_t k = 1; k <= t->npools; k++)
		if (seed_push(t, MSIM_REQ_POOL_CREATE, 0, k, 0, 0, 0))
			return MSIM_ENOMEM;
	return 0;
}

/* The private pool of the alloc at addr (entry ord), 0 if none. */
static uint32_t
pool_of(const msim_trace_t *t, uint64_t addr, uint64_t ord)
{
	size_t lo = 0, hi = t->npseg;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->pseg[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	const struct msim_pseg_s *q = &t->pseg[lo - 1];
	return addr - q->addr < q->size && q->ord <= ord ? q->pool : 0;
}

static int
pool_queue(msim_trace_t *t, int kind, uint32_t pool, msim_stream_t stream,
	   const msim_entry_t *e)
{
	if (msim_trace_seed_grow((void **)&t->pq, &t->cappq, t->npq, sizeof(*t->pq)))
		return MSIM_ENOMEM;
	t->pq[t->npq++] = (msim_req_t){
		.kind = (uint8_t)kind, .addr = pool, .stream = stream,
		.time = msim_trace_time(t, e->time_us)};
	return 0;
}

/* Ends stream i's run in its pool. */
static int
pool_end_run(msim_trace_t *t, size_t i, const msim_entry_t *e)
{
	int rc;
	if ((rc = pool_queue(t, MSIM_REQ_POOL_END, t->pcur[i].pool,
			     t->pcur[i].stream, e)) ||
	    (rc = pool_queue(t, MSIM_REQ_POOL_RELEASE, t->pcur[i].pool,
			     t->pcur[i].stream, e)))
		return rc;
	t->pcur[i] = t->pcur[--t->npcur];
	return 0;
}

/* The pool requests entry e needs before it, into t->pq: 1 if any, 0 if
 * none, or an error.  before: called before the hidden empty_cache rules
 * (ends every run at a segment_free or an oom), else after them (an alloc
 * or a segment_alloc enters its pool). */
int
msim_trace_pool_derive(msim_trace_t *t, const msim_entry_t *e, bool before)
{
	bool ends = e->action == MSIM_ACT_SEGMENT_FREE ||
		    e->action == MSIM_ACT_SEGMENT_UNMAP ||
		    e->action == MSIM_ACT_OOM;
	bool enters = e->action == MSIM_ACT_ALLOC ||
		      e->action == MSIM_ACT_SEGMENT_ALLOC;
	if (before ? !ends : !enters)
		return 0;
	if (t->pool_done) {
		t->pool_done = false; /* its requests were served */
		return 0;
	}
	int rc;
	t->npq = t->pqpos = 0;
	if (ends) {
		while (t->npcur)
			if ((rc = pool_end_run(t, t->npcur - 1, e)))
				return rc;
	} else {
		uint32_t pool = pool_of(t, e->addr, t->entries);
		size_t i = 0;
		while (i < t->npcur && t->pcur[i].stream != e->stream)
			i++;
		if (i < t->npcur && t->pcur[i].pool == pool)
			return 0;
		if (i < t->npcur && (rc = pool_end_run(t, i, e)))
			return rc;
		if (pool) {
			/* Begun on another stream: one capture a pool. */
			for (i = 0; i < t->npcur; i++)
				if (t->pcur[i].pool == pool &&
				    (rc = pool_end_run(t, i, e)))
					return rc;
			if ((rc = msim_trace_seed_grow((void **)&t->pcur, &t->cappcur,
					    t->npcur, sizeof(*t->pcur))) ||
			    (rc = pool_queue(t, MSIM_REQ_POOL_BEGIN, pool,
					     e->stream, e)))
				return rc;
			t->pcur[t->npcur++] = (struct msim_pcur_s){
				e->stream, pool};
		}
	}
	if (!t->npq)
		return 0;
	t->la = *e;
	t->have_la = true;
	t->pool_done = true;
	return 1;
}

/* The site of a snapshot block (tag of t2's table: its frames) as a tag
 * of t's, with no category: explain keeps a seeded block's category
 * "before history".  A block freed in the history has no frames here (a
 * free row's frames are the free's stack, or, recorded without stacks
 * for frees, its allocation's; neither is kept). */
static int
seed_site(msim_trace_t *t, const msim_trace_t *t2, uint16_t tag2,
	  uint16_t *tag_out)
{
	int cat;
	const char *site;
	*tag_out = 0;
	if (!tag2)
		return 0;
	msim_trace_tag(t2, tag2, &cat, &site);
	if (!*site)
		return 0;
	t->tagged = true;
	return msim_trace_tag_intern(t, MSIM_CAT_UNTAGGED, site, strlen(site),
				     tag_out);
}

/* The state of the segments a partial history began with, from a first
 * pass over the trace (t2, at its start), into t->seedq. */
static int
seed_scan(msim_trace_t *t, msim_trace_t *t2)
{
	msim_idmap_t known, pend, segs;
	seed_build_t s = {0};
	uint64_t *segord = NULL; /* by id in segs: its segment_alloc entry */
	size_t capsegord = 0;
	int rc = MSIM_ENOMEM;
	bool expandable = false;
	/* Bytes the segment rows reserved (net), and then at the first oom
	 * record. */
	int64_t seg_net = 0, seg_at_oom = 0;
	bool oom_seen = false;
	msim_trace_oom_t oom = {0};
	memset(&known, 0, sizeof(known));
	memset(&pend, 0, sizeof(pend));
	memset(&segs, 0, sizeof(segs));
	if (msim_idmap_init(&known) || msim_idmap_init(&pend) ||
	    msim_idmap_init(&segs))
		goto out;
	msim_entry_t e;
	uint32_t id;
	while ((rc = msim_trace_next_entry(t2, &e)) == 1) {
		rc = 0;
		switch (e.action) {
		case MSIM_ACT_ALLOC:
			if (e.addr)
				rc = msim_idmap_add(&known, e.addr, &id);
			break;
		case MSIM_ACT_FREE_REQUESTED:
			if (!msim_idmap_find(&known, e.addr, &id) ||
			    !msim_idmap_find(&pend, e.addr, &id) || !e.addr)
				break;
			t->seed.from_frees++;
			if (!(rc = msim_idmap_add(&pend, e.addr, &id)))
				rc = seed_add_blk(&s, e.addr, e.size, 0,
						  e.stream, 0);
			break;
		case MSIM_ACT_FREE_COMPLETED:
			if (!msim_idmap_remove(&known, e.addr, &id) ||
			    !msim_idmap_remove(&pend, e.addr, &id) || !e.addr)
				break;
			t->seed.from_frees++;
			rc = seed_add_blk(&s, e.addr, e.size, 0, e.stream, 0);
			break;
		case MSIM_ACT_SEGMENT_ALLOC:
			rc = msim_idmap_add(&segs, e.addr, &id);
			if (rc == 0 && !(rc = msim_trace_seed_grow((void **)&segord,
							&capsegord, id,
							sizeof(*segord))))
				segord[id] = t2->entries;
			break;
		case MSIM_ACT_SEGMENT_FREE:
			if (msim_idmap_remove(&segs, e.addr, &id) &&
			    e.size)
				rc = seed_add_seg(&s, e.addr, e.size, e.stream,
						  e.size > SEED_SMALL_BUFFER,
						  0);
			break;
		case MSIM_ACT_SEGMENT_MAP:
		case MSIM_ACT_SEGMENT_UNMAP:
			expandable = true;
			break;
		case MSIM_ACT_OOM:
			if (!oom_seen) {
				oom_seen = true;
				seg_at_oom = seg_net;
				oom.device_free = e.addr;
				oom.size = e.size;
			}
			break;
		default:
			break;
		}
		if (e.action == MSIM_ACT_SEGMENT_ALLOC ||
		    e.action == MSIM_ACT_SEGMENT_MAP)
			seg_net += (int64_t)e.size;
		else if (e.action == MSIM_ACT_SEGMENT_FREE ||
			 e.action == MSIM_ACT_SEGMENT_UNMAP)
			seg_net -= (int64_t)e.size;
		if (rc == MSIM_ENOMEM)
			goto out;
	}
	if (rc < 0) {
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", t2->errmsg);
		goto out;
	}
	/* The snapshot's state: its live blocks, and the segments no row
	 * created. */
	const msim_snap_segment_t *g;
	size_t ng;
	rc = MSIM_ENOMEM;
	if (msim_trace_segments(t2, &g, &ng) ||
	    pool_scan(t, g, ng, &segs, segord))
		goto out;
	for (size_t i = 0; i < ng; i++) {
		if (g[i].expandable)
			expandable = true;
		else if (msim_idmap_find(&segs, g[i].addr, &id) &&
			 seed_add_seg(&s, g[i].addr, g[i].total_size,
				      g[i].stream, g[i].large, g[i].pool))
			goto out;
		for (size_t k = 0; k < g[i].nblocks; k++) {
			const msim_snap_block_t *b = &g[i].blocks[k];
			if (b->state == MSIM_SNAP_INACTIVE)
				continue;
			t->seed.snap_live++;
			t->seed.snap_live_bytes += b->requested;
			if (!msim_idmap_find(&known, b->addr, &id)) {
				t->seed.explained++;
				t->seed.explained_bytes += b->requested;
			} else if (msim_idmap_find(&pend, b->addr, &id)) {
				t->seed.from_snapshot++;
				uint16_t tag;
				if (seed_site(t, t2, b->tag, &tag) ||
				    seed_add_blk(&s, b->addr, b->requested,
						 b->size, g[i].stream, tag))
					goto out;
			}
		}
	}
	if (oom_seen && ng) {
		/* Reserved at the record: the segments at the end (the
		 * snapshot's state) less what the rows after it reserved. */
		int64_t end = 0;
		for (size_t i = 0; i < ng; i++)
			end += (int64_t)g[i].total_size;
		int64_t at = end - (seg_net - seg_at_oom);
		if (at >= 0) {
			oom.reserved = (uint64_t)at;
			t->oomrec = oom;
			t->have_oom = true;
		}
	}
	if (t2->have_conf) {
		memcpy(t->alloc_conf, t2->alloc_conf, sizeof(t->alloc_conf));
		t->have_conf = true;
	}
	if (t->opt.strict) {
		/* The settings only: a partial history stays an error. */
		t->seed.from_frees = t->seed.from_snapshot = 0;
		rc = 0;
		goto out;
	}
	if (!s.nb && !s.ng) {
		rc = 0;
		goto out;
	}
	if (expandable)
		msim_trace_seed_inexact(t, "expandable segments are seeded without "
			     "their layout");
	if (!ng)
		msim_trace_seed_inexact(t, "the snapshot has no segments state");
	if (s.nb)
		qsort(s.b, s.nb, sizeof(*s.b), seed_blk_cmp);
	if (s.ng)
		qsort(s.g, s.ng, sizeof(*s.g), seed_seg_cmp);
	/* Each segment with its blocks, then the blocks outside them. */
	size_t j = 0;
	unsigned char *placed = s.nb ? calloc(s.nb, 1) : NULL;
	if (s.nb && !placed)
		goto out;
	for (size_t i = 0; i < s.ng; i++) {
		if (i && s.g[i].addr < s.g[i - 1].addr + s.g[i - 1].size)
			continue; /* the same segment twice */
		while (j < s.nb && s.b[j].addr < s.g[i].addr)
			j++;
		size_t k = j;
		while (k < s.nb && s.b[k].addr < s.g[i].addr + s.g[i].size)
			placed[k++] = 1;
		/* s.b is NULL when the snapshot lists no blocks. */
		if ((rc = seed_segment(t, &s, &s.g[i], s.nb ? s.b + j : NULL,
				       k - j))) {
			free(placed);
			goto out;
		}
		j = k;
	}
	for (size_t i = 0; i < s.nb; i++) {
		if (placed[i])
			continue;
		t->seed.unplaced++;
		if ((rc = seed_alloc(t, &s.b[i], s.b[i].size))) {
			free(placed);
			goto out;
		}
	}
	free(placed);
	if (t->seed.unplaced && ng)
		msim_trace_seed_inexact(t, "some seeded blocks lie in no segment the "
			     "snapshot knows");
	for (size_t i = 0; i < s.nfill; i++)
		if ((rc = seed_push(t, MSIM_REQ_FREE, s.fill[i], 0, 0, 0,
				    MSIM_REQF_FILLER)))
			goto out;
	for (size_t i = 0; i < s.nfill; i++)
		if ((rc = msim_idmap_put_id(&t->ids, s.fill[i])))
			goto out;
	/* The history begins here: peaks from now on. */
	rc = seed_push(t, MSIM_REQ_RESET_PEAKS, 0, 0, 0, 0, 0);
out:
	if (rc == MSIM_ENOMEM)
		msim_trace_fail(t, rc, "%s", msim_strerror(rc));
	msim_idmap_clear(&known);
	msim_idmap_clear(&pend);
	msim_idmap_clear(&segs);
	free(segord);
	free(s.b);
	free(s.g);
	free(s.fill);
	return rc;
}

int
msim_trace_prescan(msim_trace_t *t)
{
	if (t->prescanned)
		return 0;
	t->prescanned = true;
	t->seed.exact = true;
	if (t->opt.all_devices)
		return 0;
	if (!t->format->segments || !t->size) {
		t->lazy_seed = !t->opt.strict;
		return 0;
	}
	msim_trace_options_t o = t->opt;
	o.format = t->format;
	o.hidden_empty_cache = false;
	msim_trace_t *t2;
	char why[512];
	int rc = msim_trace_open(t->path, &o, &t2, why, sizeof(why));
	if (rc) {
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", why);
		return rc;
	}
	t->seed.first_pass = true;
	rc = seed_scan(t, t2);
	msim_trace_close(t2);
	return rc;
}

void
msim_trace_seeding(const msim_trace_t *t, msim_trace_seed_t *out)
{
	*out = t->seed;
	if (!t->prescanned)
		out->exact = true;
}

const msim_req_t *
msim_trace_seed_requests(const msim_trace_t *t, size_t *n_out)
{
	*n_out = t->nseedq;
	return t->seedq;
}
