/*
 * The engine of engine.h: a binary heap of policy events (ordered by time,
 * then by queueing sequence) merged with the source's requests, one request
 * looked ahead.  The hot path is one request -> one policy call -> a
 * timeline check.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine.h"
#include "sim/error.h"
#include "sim/lean.h"
#include "sim/grow.h"

typedef struct ev_s {
	msim_time_t time;
	uint64_t seq;
	uint64_t cookie;
} ev_t;

struct msim_sim_s {
	msim_source_t src;
	msim_device_t *dev;
	msim_policy_t *pol;
	msim_policy_hot_t hot; /* pol's request functions (sim_lean()) */
	bool keep_going, done, src_done, have_next, summarized;
	msim_addr_t last_addr; /* of the last ALLOC served (for observe) */
	msim_req_t next;
	uint64_t next_seq; /* sequence of the looked-ahead request */
	uint64_t seq;      /* queueing sequence */
	msim_time_t clock;
	ev_t *heap;
	size_t nheap, capheap;
	uint8_t *dead; /* ids whose alloc failed, by id */
	size_t ndead;
	msim_summary_t sum;
	uint64_t next_sample; /* request count of the next timeline sample */
	bool peak_blocks;       /* snapshot the blocks at each new peak */
	uint64_t peak_from;     /* ... in requests from this one on */
	uint64_t blocks_at;     /* msim_sim_config_t's */
	void (*observe)(void *ctx, const msim_req_t *req, int rc);
	void *observe_ctx;
	uint64_t snap_reserved; /* reserved bytes of the last snapshot */
	uint64_t snap_request;  /* the request it followed, or UINT64_MAX */
	msim_block_t *snap;
	size_t nsnap, capsnap;
	double frag_sum;
	uint64_t frag_n;
	msim_timeline_t tl;
	/* After a reset_peak_memory_stats() request: the peaks since. */
	bool peaks_reset;
	msim_stats_t peaks;
	char errmsg[512];
};

/* The msim_stat_t fields of st, as an array (see msim_stats_finish()). */
static msim_stat_t *
sim_stat_array(msim_stats_t *st, size_t *n_out)
{
	*n_out = offsetof(msim_stats_t, num_alloc_retries) /
		 sizeof(msim_stat_t);
	return (msim_stat_t *)st;
}

/* Follows the peaks since reset_peak_memory_stats(): policies keep their
 * peaks since the start, so the engine keeps its own after a reset. */
static void
sim_track_peaks(msim_sim_t *sim)
{
	if (!sim->peaks_reset)
		return;
	msim_stats_t st;
	size_t n;
	msim_policy_stats(sim->pol, &st);
	msim_stat_t *cur = sim_stat_array(&st, &n);
	msim_stat_t *pk = sim_stat_array(&sim->peaks, &n);
	for (size_t i = 0; i < n; i++)
		if (cur[i].current > pk[i].peak)
			pk[i].peak = cur[i].current;
}

static bool
ev_less(const ev_t *a, const ev_t *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static int
sim_schedule(void *ctx, msim_time_t when, uint64_t cookie)
{
	msim_sim_t *sim = ctx;
	if (MSIM_GROW(sim->heap, sim->capheap, sim->nheap + 1, 64))
		return MSIM_ENOMEM;
	size_t i = sim->nheap++;
	ev_t ev = {when, sim->seq++, cookie};
	while (i > 0 && ev_less(&ev, &sim->heap[(i - 1) / 2])) {
		sim->heap[i] = sim->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	sim->heap[i] = ev;
	return 0;
}

static ev_t
ev_pop(msim_sim_t *sim)
{
	ev_t top = sim->heap[0], last = sim->heap[--sim->nheap];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= sim->nheap)
			break;
		if (c + 1 < sim->nheap && ev_less(&sim->heap[c + 1], &sim->heap[c]))
			c++;
		if (!ev_less(&sim->heap[c], &last))
			break;
		sim->heap[i] = sim->heap[c];
		i = c;
	}
	if (sim->nheap)
		sim->heap[i] = last;
	return top;
}

int
msim_sim_new(const msim_sim_config_t *cfg, msim_sim_t **out, char *why,
	     size_t whylen)
{
	int rc = MSIM_ENOMEM;
	msim_sim_t *sim = calloc(1, sizeof(*sim));
	if (why && whylen)
		why[0] = '\0';
	if (!sim)
		goto fail;
	sim->src = cfg->source;
	sim->keep_going = cfg->keep_going;
	sim->peak_blocks = cfg->peak_blocks;
	sim->peak_from = cfg->peak_blocks_from;
	sim->snap_request = UINT64_MAX;
	sim->observe = cfg->observe;
	sim->observe_ctx = cfg->observe_ctx;
	sim->sum.oom_request = -1;
	sim->next_sample = 1;
	/* Its one "sample": the blocks, then the end (sim_sample()). */
	if ((sim->blocks_at = cfg->blocks_at))
		sim->next_sample = cfg->blocks_at;
	if ((rc = msim_timeline_init(&sim->tl, cfg->timeline_points
					 ? cfg->timeline_points : 1024)))
		goto fail;
	rc = MSIM_ENOMEM;
	if (!(sim->dev = msim_device_new(&cfg->device)))
		goto fail;
	if (cfg->fraction > 0 &&
	    (rc = msim_device_set_fraction(sim->dev, cfg->fraction))) {
		snprintf(why, whylen, "memory fraction %g is not in [0, 1]",
			 cfg->fraction);
		goto fail;
	}
	msim_device_set_scheduler(sim->dev, sim_schedule, sim);
	msim_device_bind(sim->dev, &sim->clock, &sim->sum.requests);
	if (!cfg->policy) {
		rc = MSIM_EINVAL;
		snprintf(why, whylen, "no policy given");
		goto fail;
	}
	if ((rc = msim_policy_new(cfg->policy, sim->dev, cfg->params,
				  &sim->pol, why, whylen)))
		goto fail;
	*out = sim;
	return 0;
fail:
	if (why && whylen && !why[0])
		snprintf(why, whylen, "%s", msim_strerror(rc));
	msim_sim_destroy(sim);
	return rc;
}

void
msim_sim_destroy(msim_sim_t *sim)
{
	if (!sim)
		return;
	msim_policy_destroy(sim->pol);
	msim_device_destroy(sim->dev);
	msim_timeline_clear(&sim->tl);
	free(sim->heap);
	free(sim->dead);
	free(sim->snap);
	free(sim);
}

static void snap_add(void *ctx, const msim_block_t *b);

static void
sim_sample(msim_sim_t *sim)
{
	msim_sample_t s = {.request = sim->sum.requests, .time = sim->clock};
	msim_policy_sample(sim->pol, &s.allocated, &s.reserved, &s.active,
			   &s.requested);
	msim_policy_free_info(sim->pol, &s.largest_free, &s.free);
	msim_timeline_add(&sim->tl, &s);
	sim->next_sample = (sim->sum.requests / sim->tl.stride + 1) *
			   sim->tl.stride;
	sim->frag_sum += msim_frag(s.allocated, s.reserved);
	sim->frag_n++;
	double ext = msim_ext_frag(s.largest_free, s.free);
	if (ext > sim->sum.ext_frag_max)
		sim->sum.ext_frag_max = ext;
	/* The one sample of a run to blocks_at: the blocks, then the end
	 * (checked last, so that the hot loop's call stays a plain call). */
	if (sim->blocks_at) {
		sim->nsnap = 0;
		msim_policy_blocks(sim->pol, snap_add, sim);
		sim->done = true;
	}
}

static void
snap_add(void *ctx, const msim_block_t *b)
{
	msim_sim_t *sim = ctx;
	if (MSIM_GROW(sim->snap, sim->capsnap, sim->nsnap + 1, 1024))
		return; /* the snapshot is cut short, the run goes on */
	sim->snap[sim->nsnap++] = *b;
}

/* After an ALLOC (the request sum.requests, not counted yet): at a new
 * peak of reserved bytes since peak_from, the blocks. */
static void
sim_snapshot(msim_sim_t *sim)
{
	if (sim->sum.requests < sim->peak_from)
		return;
	uint64_t reserved = msim_device_reserved(sim->dev);
	if (reserved <= sim->snap_reserved)
		return;
	sim->snap_reserved = reserved;
	sim->snap_request = sim->sum.requests;
	sim->nsnap = 0;
	msim_policy_blocks(sim->pol, snap_add, sim);
}

const msim_block_t *
msim_sim_peak_blocks(const msim_sim_t *sim, size_t *n_out)
{
	*n_out = sim->nsnap;
	return sim->snap;
}

uint64_t
msim_sim_peak_blocks_request(const msim_sim_t *sim)
{
	return sim->snap_request;
}

static int
sim_mark_dead(msim_sim_t *sim, uint32_t id, uint8_t value)
{
	if (id >= sim->ndead) {
		size_t n = sim->ndead ? sim->ndead : 1024;
		while (n <= id)
			n *= 2;
		uint8_t *d = realloc(sim->dead, n);
		if (!d)
			return MSIM_ENOMEM;
		memset(d + sim->ndead, 0, n - sim->ndead);
		sim->dead = d;
		sim->ndead = n;
	}
	sim->dead[id] = value;
	return 0;
}

static int
sim_fail(msim_sim_t *sim, int rc, const char *what)
{
	snprintf(sim->errmsg, sizeof(sim->errmsg), "request %llu: %s: %s",
		 (unsigned long long)sim->sum.requests, what,
		 msim_strerror(rc));
	return rc;
}

/* After the policy served (rc 0, at addr) or refused an ALLOC: OOMs
 * expected or not, recorded addresses, the peak snapshot, the observer.
 * Returns 0 or an error. */
static int
sim_allocated(msim_sim_t *sim, const msim_req_t *req, int rc,
	      msim_addr_t addr)
{
	if (rc == MSIM_EDEVOOM) {
		if (req->flags & MSIM_REQF_EXPECT_OOM) {
			sim->sum.ooms_expected++;
		} else {
			if (sim->sum.oom_request < 0)
				sim->sum.oom_request =
					(int64_t)sim->sum.requests;
			if (!sim->keep_going) {
				sim->done = true;
			} else {
				int drc = sim_mark_dead(sim, req->id, 1);
				if (drc)
					return drc;
			}
		}
	} else if (rc == MSIM_EFORMAT) {
		return sim_fail(sim, rc, "alloc: a segment at the trace's "
				"address is unaligned or wraps around");
	} else if (rc == MSIM_EINVAL) {
		return sim_fail(sim, rc, "alloc refused (on a stream capturing "
				"to a private pool that was released and "
				"emptied?)");
	} else if (rc) {
		return sim_fail(sim, rc, "alloc");
	} else if (req->flags & MSIM_REQF_EXPECT_OOM) {
		/* The recording ran out of memory here, we did not: give
		 * the block back at once, as the program never got it. */
		sim->sum.ooms_unmatched++;
		msim_req_t fr = *req;
		fr.kind = MSIM_REQ_FREE;
		if ((rc = msim_policy_free(sim->pol, &fr)))
			return sim_fail(sim, rc, "free");
	} else if (req->addr) {
		if (addr == req->addr)
			sim->sum.addr_same++;
		else
			sim->sum.addr_other++;
	}
	if (sim->peak_blocks)
		sim_snapshot(sim);
	sim->last_addr = rc ? 0 : addr;
	if (sim->observe)
		sim->observe(sim->observe_ctx, req, rc);
	return 0;
}

/* Serves one request; returns 0, or an error. */
static int
sim_request(msim_sim_t *sim, const msim_req_t *req)
{
	msim_addr_t addr;
	int rc;
	switch (req->kind) {
	case MSIM_REQ_SEGMENT_HINT:
		if ((rc = msim_device_hint(sim->dev, req->addr)))
			return sim_fail(sim, rc, rc == MSIM_EFORMAT
				? "segment address is not a multiple of 256 "
				  "or is above 2^63"
				: "segment address");
		return 0;
	case MSIM_REQ_RESET_PEAKS: {
		/* torch.cuda.reset_peak_memory_stats(): peak = current. */
		size_t n;
		msim_policy_stats(sim->pol, &sim->peaks);
		msim_stat_t *pk = sim_stat_array(&sim->peaks, &n);
		for (size_t i = 0; i < n; i++)
			pk[i].peak = pk[i].current;
		sim->peaks_reset = true;
		if (sim->observe) /* where peaks count from (lab/explain.c) */
			sim->observe(sim->observe_ctx, req, 0);
		return 0;
	}
	case MSIM_REQ_EMPTY_CACHE:
		return msim_policy_empty_cache(sim->pol);
	case MSIM_REQ_POOL_CREATE:
	case MSIM_REQ_POOL_BEGIN:
	case MSIM_REQ_POOL_END:
	case MSIM_REQ_POOL_RELEASE:
	case MSIM_REQ_POOL_RESTORE:
		if ((rc = msim_policy_private_pool(sim->pol, req))) {
			static const char *const names[] = {
				"pool_create", "pool_begin", "pool_end",
				"pool_release", "pool_restore"};
			char what[160];
			snprintf(what, sizeof(what), "%s of pool %llu (a "
				 "begin while one is underway, an end without "
				 "a begin, a release without a create, a "
				 "restore of a pool that is not live?)",
				 names[req->kind - MSIM_REQ_POOL_CREATE],
				 (unsigned long long)req->addr);
			return sim_fail(sim, rc, what);
		}
		return 0;
	case MSIM_REQ_FREE_REQUESTED:
		if (req->id < sim->ndead && sim->dead[req->id])
			return 0;
		if ((rc = msim_policy_free_requested(sim->pol, req)))
			return sim_fail(sim, rc, "free_requested");
		if (sim->observe)
			sim->observe(sim->observe_ctx, req, 0);
		return 0;
	case MSIM_REQ_ALLOC:
		if ((req->flags & MSIM_REQF_MAYBE_EMPTY_CACHE) &&
		    !msim_policy_would_release(sim->pol, req) &&
		    (rc = msim_policy_empty_cache(sim->pol)))
			return sim_fail(sim, rc, "empty_cache");
		rc = msim_policy_alloc(sim->pol, req, &addr);
		if ((rc = sim_allocated(sim, req, rc, addr)))
			return rc;
		break;
	case MSIM_REQ_FREE:
		if (req->id < sim->ndead && sim->dead[req->id]) {
			sim->dead[req->id] = 0;
			break;
		}
		if ((rc = msim_policy_free(sim->pol, req)))
			return sim_fail(sim, rc, "free of a block not live");
		if (sim->observe)
			sim->observe(sim->observe_ctx, req, 0);
		break;
	default:
		return sim_fail(sim, MSIM_EINVAL, "unknown request kind");
	}
	if (++sim->sum.requests == sim->next_sample)
		sim_sample(sim);
	sim_track_peaks(sim);
	return 0;
}

/* Reads the next request of the source ahead, unless read already.
 * Returns 0 or an error. */
static int
sim_look_ahead(msim_sim_t *sim)
{
	if (sim->have_next || sim->src_done)
		return 0;
	int rc = sim->src.next(sim->src.ctx, &sim->next);
	if (rc < 0) {
		snprintf(sim->errmsg, sizeof(sim->errmsg), "%s",
			 sim->src.errmsg(sim->src.ctx));
		return rc;
	}
	if (rc == 0) {
		sim->src_done = true;
	} else {
		sim->have_next = true;
		sim->next_seq = sim->seq++;
		if (sim->next.time < sim->clock)
			sim->next.time = sim->clock;
	}
	return 0;
}

int
msim_sim_peek(msim_sim_t *sim, msim_time_t *when_out)
{
	if (sim->done)
		return 0;
	int rc = sim_look_ahead(sim);
	if (rc)
		return rc;
	if (!sim->have_next && !sim->nheap)
		return 0;
	msim_time_t t = sim->have_next ? sim->next.time : UINT64_MAX;
	if (sim->nheap && sim->heap[0].time < t)
		t = sim->heap[0].time;
	*when_out = t;
	return 1;
}

int
msim_sim_step(msim_sim_t *sim)
{
	if (sim->done)
		return 0;
	int rc0 = sim_look_ahead(sim);
	if (rc0)
		return rc0;
	if (sim->nheap &&
	    (!sim->have_next ||
	     ev_less(&sim->heap[0],
		     &(ev_t){sim->next.time, sim->next_seq, 0}))) {
		ev_t ev = ev_pop(sim);
		sim->clock = ev.time;
		int rc = msim_policy_on_event(sim->pol, ev.cookie);
		sim_track_peaks(sim);
		return rc ? sim_fail(sim, rc, "policy event") : 1;
	}
	if (!sim->have_next) {
		sim->done = true;
		return 0;
	}
	sim->have_next = false;
	sim->clock = sim->next.time;
	int rc = sim_request(sim, &sim->next);
	if (rc)
		return rc;
	return sim->done ? 0 : 1;
}

/* The lean loop through the policy's functions (sim/lean.h), for a policy
 * without ops->serve: one copy with ops->free_now, one without. */
static int
sim_serve_now(const msim_policy_hot_t *hp, msim_lean_t *L,
	      const msim_req_t *v, size_t n, size_t *at)
{
	return msim_lean_run(L, v, n, at, hp->state, hp->alloc, hp->free,
			     hp->free_requested, hp->free_now, true, false);
}

static int
sim_serve_apart(const msim_policy_hot_t *hp, msim_lean_t *L,
		const msim_req_t *v, size_t n, size_t *at)
{
	return msim_lean_run(L, v, n, at, hp->state, hp->alloc, hp->free,
			     hp->free_requested, NULL, true, false);
}

/* With the blocks at a new peak taken after each ALLOC (peak_blocks). */
static void
sim_snap_cb(void *ctx)
{
	sim_snapshot(ctx);
}

static int
sim_serve_snap(const msim_policy_hot_t *hp, msim_lean_t *L,
	       const msim_req_t *v, size_t n, size_t *at)
{
	return msim_lean_run(L, v, n, at, hp->state, hp->alloc, hp->free,
			     hp->free_requested, hp->free_now, true, true);
}

/*
 * The lean path over v[*at..n) (sim/lean.h): plain allocs, frees and
 * free_requested rows go straight to the policy's functions, or its own
 * copy of the loop (ops->serve), while no policy event is pending; the
 * timeline samples are taken here as the loop stops for them.  It stops at
 * anything else, leaving it to sim_request(), and after an alloc the
 * policy refused.  Returns 0 with *at at the first request it left, or an
 * error.  Requests take no queueing sequence here: with batches, events
 * due by a request's time go before it (sim_run_batches()), and events
 * order among themselves by theirs.
 */
static int
sim_lean(msim_sim_t *sim, const msim_req_t *v, size_t n, size_t *at)
{
	const msim_policy_hot_t *hp = &sim->hot;
	msim_lean_t L = {.clock = &sim->clock, .requests = &sim->sum.requests,
			 .nheap = &sim->nheap, .snap = sim_snap_cb,
			 .snap_ctx = sim};
	int st, rc = 0;
	do {
		L.next_sample = sim->next_sample;
		st = sim->peak_blocks ? sim_serve_snap(hp, &L, v, n, at)
		     : hp->serve ? hp->serve(hp->state, &L, v, n, at)
		     : hp->free_now ? sim_serve_now(hp, &L, v, n, at)
		     : sim_serve_apart(hp, &L, v, n, at);
		if (st == MSIM_LEAN_SAMPLE)
			sim_sample(sim);
	} while (st == MSIM_LEAN_SAMPLE && !sim->done && *at < n);
	sim->sum.addr_same += L.addr_same;
	sim->sum.addr_other += L.addr_other;
	if (st == MSIM_LEAN_FAIL)
		return sim_fail(sim, L.rc, L.what);
	if (st == MSIM_LEAN_REFUSED) {
		/* an OOM: dead ids, or the end */
		if ((rc = sim_allocated(sim, &v[*at], L.rc, L.addr)))
			return rc;
		if (++sim->sum.requests == sim->next_sample)
			sim_sample(sim);
		++*at;
	}
	return 0;
}

/* msim_sim_run() over a source that hands out batches: requests are
 * served from the batch while no policy event is due before them. */
static int
sim_run_batches(msim_sim_t *sim)
{
	/* The lean path, chosen once: nothing watches each request, so
	 * plain requests (no flags, no ids left dead by an OOM, no peaks
	 * reset) go through sim_lean(); the rest through sim_request().
	 * The blocks at a new peak are taken there too (after an ALLOC). */
	bool lean = !sim->observe;
	msim_policy_hot(sim->pol, &sim->hot);
	for (;;) {
		const msim_req_t *v;
		size_t n;
		int rc = sim->done ? 0 : sim->src.batch(sim->src.ctx, &v, &n);
		if (rc < 0) {
			snprintf(sim->errmsg, sizeof(sim->errmsg), "%s",
				 sim->src.errmsg(sim->src.ctx));
			return rc;
		}
		if (rc == 0)
			break;
		for (size_t i = 0; i < n && !sim->done;) {
			if (lean && !sim->ndead && !sim->peaks_reset) {
				if ((rc = sim_lean(sim, v, n, &i)))
					return rc;
				if (i == n || sim->done)
					break;
			}
			const msim_req_t *req = &v[i++];
			msim_time_t t = req->time > sim->clock ? req->time
								: sim->clock;
			/* Policy events due first (queued before this request
			 * was read: they win ties). */
			while (sim->nheap && sim->heap[0].time <= t) {
				ev_t ev = ev_pop(sim);
				sim->clock = ev.time;
				if ((rc = msim_policy_on_event(sim->pol, ev.cookie)))
					return sim_fail(sim, rc, "policy event");
			}
			sim->seq++;
			sim->clock = t;
			if ((rc = sim_request(sim, req)))
				return rc;
		}
	}
	sim->src_done = true;
	/* Events left after the last request. */
	while (sim->nheap && !sim->done) {
		ev_t ev = ev_pop(sim);
		sim->clock = ev.time;
		int rc = msim_policy_on_event(sim->pol, ev.cookie);
		if (rc)
			return sim_fail(sim, rc, "policy event");
	}
	sim->done = true;
	return 0;
}

int
msim_sim_run(msim_sim_t *sim)
{
	int rc;
	if (sim->src.batch)
		return sim_run_batches(sim);
	for (;;) {
		/* The hot path: no policy events pending, serve the source
		 * directly. */
		while (!sim->nheap && !sim->have_next && !sim->done &&
		       !sim->src_done) {
			msim_req_t *req = &sim->next;
			rc = sim->src.next(sim->src.ctx, req);
			if (rc < 0) {
				snprintf(sim->errmsg, sizeof(sim->errmsg), "%s",
					 sim->src.errmsg(sim->src.ctx));
				return rc;
			}
			if (rc == 0) {
				sim->src_done = true;
				break;
			}
			sim->seq++;
			if (req->time > sim->clock)
				sim->clock = req->time;
			if ((rc = sim_request(sim, req)))
				return rc;
		}
		if ((rc = msim_sim_step(sim)) <= 0)
			return rc;
	}
}

const char *
msim_sim_errmsg(const msim_sim_t *sim)
{
	return sim->errmsg;
}

void
msim_sim_stats(const msim_sim_t *sim, msim_stats_t *out)
{
	msim_policy_stats(sim->pol, out);
	if (sim->peaks_reset) {
		size_t n;
		msim_stat_t *o = sim_stat_array(out, &n);
		const msim_stat_t *pk =
			sim_stat_array((msim_stats_t *)&sim->peaks, &n);
		for (size_t i = 0; i < n; i++)
			o[i].peak = pk[i].peak > o[i].current ? pk[i].peak
							      : o[i].current;
	}
}

void
msim_sim_summary(msim_sim_t *sim, msim_summary_t *out)
{
	msim_stats_t st;
	if (!sim->summarized) /* the final state is always on the curve */
		sim_sample(sim);
	sim->summarized = true;
	msim_sim_stats(sim, &st);
	sim->sum.frag_at_peak =
		msim_frag(st.allocated_bytes[MSIM_POOL_ALL].peak,
			  st.reserved_bytes[MSIM_POOL_ALL].peak);
	sim->sum.frag_mean = sim->frag_n ? sim->frag_sum / sim->frag_n : 0.0;
	sim->sum.end_time = sim->clock;
	*out = sim->sum;
}

const msim_timeline_t *
msim_sim_timeline(const msim_sim_t *sim)
{
	return &sim->tl;
}

msim_device_t *
msim_sim_device(msim_sim_t *sim)
{
	return sim->dev;
}

msim_policy_t *
msim_sim_policy(msim_sim_t *sim)
{
	return sim->pol;
}

msim_addr_t
msim_sim_last_addr(const msim_sim_t *sim)
{
	return sim->last_addr;
}
