/* The collector of lab/snapout.h. */
#include <config.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/snapout.h"
#include "sim/device.h"
#include "sim/error.h"
#include "sim/grow.h"
#include "sim/policy.h"
#include "traces/snapshot_out.h"
#include "traces/trace.h"

/* A block a request allocated, by its id. */
typedef struct rec_blk_s {
	uint64_t addr, requested, stream;
	const char *site;
	bool live;
} rec_blk_t;

/* A device range the run holds: a segment, or an expandable one's pages
 * (merged when contiguous). */
typedef struct rec_seg_s {
	uint64_t addr, size;
	bool expandable;
} rec_seg_t;

struct msim_snaprec_s {
	msim_job_t *job;
	msim_snapout_entry_t *ent;
	size_t nent, capent;
	rec_blk_t *blk;            /* by request id */
	size_t nblk, capblk;
	size_t evpos;              /* device events turned into entries */
	msim_block_t *pb;          /* the policy's blocks at the end, or
				    * at the peak */
	size_t npb, cappb;
	bool oom;                  /* out of host memory on the way */
	/* at_peak: the state when the device first held its most bytes:
	 * the entries and device events up to then, the blocks by id. */
	bool at_peak;
	uint64_t peak;             /* bytes reserved then */
	size_t peak_nent, peak_nev;
	rec_blk_t *pblk;
	size_t npblk, cappblk;
};

msim_snaprec_t *
msim_snaprec_new(bool at_peak)
{
	msim_snaprec_t *rec = calloc(1, sizeof(msim_snaprec_t));
	if (rec)
		rec->at_peak = at_peak;
	return rec;
}

void
msim_snaprec_attach(msim_snaprec_t *rec, msim_job_t *job)
{
	rec->job = job;
}

static msim_snapout_entry_t *
rec_push(msim_snaprec_t *rec)
{
	if (MSIM_GROW(rec->ent, rec->capent, rec->nent + 1, 1024)) {
		rec->oom = true;
		return NULL;
	}
	msim_snapout_entry_t *e = &rec->ent[rec->nent++];
	memset(e, 0, sizeof(*e));
	return e;
}

/* The device's segment events logged since the last call, as entries. */
static void
rec_drain(msim_snaprec_t *rec, uint64_t time_us)
{
	size_t n;
	const msim_seg_event_t *ev =
		msim_device_events(msim_sim_device(msim_job_sim(rec->job)), &n);
	static const int act[] = {
		[MSIM_SEG_ALLOC] = MSIM_ACT_SEGMENT_ALLOC,
		[MSIM_SEG_FREE] = MSIM_ACT_SEGMENT_FREE,
		[MSIM_SEG_MAP] = MSIM_ACT_SEGMENT_MAP,
		[MSIM_SEG_UNMAP] = MSIM_ACT_SEGMENT_UNMAP,
	};
	for (; rec->evpos < n; rec->evpos++) {
		const msim_seg_event_t *v = &ev[rec->evpos];
		if (v->action > MSIM_SEG_UNMAP)
			continue; /* the oom comes from the request */
		msim_snapout_entry_t *e = rec_push(rec);
		if (!e)
			return;
		e->action = act[v->action];
		e->addr = v->addr;
		e->size = v->size;
		e->time_us = time_us;
	}
}

static void rec_block(void *ctx, const msim_block_t *b);

/* The request req, served with rc, as entries. */
static void
rec_observe(msim_snaprec_t *rec, const msim_req_t *req, int rc)
{
	msim_sim_t *sim = msim_job_sim(rec->job);
	uint64_t t = req->time / 1000;
	rec_drain(rec, t);
	msim_snapout_entry_t *e = rec_push(rec);
	if (!e)
		return;
	e->stream = req->stream;
	e->time_us = t;
	if (req->kind == MSIM_REQ_ALLOC) {
		msim_trace_t *tr = msim_job_trace(rec->job);
		int cat;
		const char *site = NULL;
		if (tr && req->tag)
			msim_trace_tag(tr, req->tag, &cat, &site);
		e->site = site;
		e->size = req->size;
		if (rc) {
			e->action = MSIM_ACT_OOM;
			e->addr = msim_device_avail(msim_sim_device(sim));
			return;
		}
		e->action = MSIM_ACT_ALLOC;
		e->addr = msim_sim_last_addr(sim);
		if (MSIM_GROW(rec->blk, rec->capblk, (size_t)req->id + 1, 1024)) {
			rec->oom = true;
			return;
		}
		while (rec->nblk <= req->id)
			memset(&rec->blk[rec->nblk++], 0, sizeof(rec_blk_t));
		rec->blk[req->id] = (rec_blk_t){.addr = e->addr,
						.requested = req->size,
						.stream = req->stream,
						.site = site, .live = true};
		if (req->flags & MSIM_REQF_EXPECT_OOM) {
			/* Recorded as an OOM, served here: the engine gave it
			 * back at once. */
			msim_snapout_entry_t *f = rec_push(rec);
			if (f) {
				*f = *e;
				f->action = MSIM_ACT_FREE_COMPLETED;
				f->site = NULL;
			}
			rec->blk[req->id].live = false;
		}
		return;
	}
	const rec_blk_t *b = req->id < rec->nblk ? &rec->blk[req->id] : NULL;
	e->action = req->kind == MSIM_REQ_FREE ? MSIM_ACT_FREE_COMPLETED
					       : MSIM_ACT_FREE_REQUESTED;
	e->addr = b ? b->addr : 0;
	e->size = b ? b->requested : 0;
	if (b && req->kind == MSIM_REQ_FREE)
		rec->blk[req->id].live = false;
}

void
msim_snaprec_observe(void *ctx, const msim_req_t *req, int rc)
{
	msim_snaprec_t *rec = ctx;
	rec_observe(rec, req, rc);
	if (!rec->at_peak || rec->oom)
		return;
	msim_sim_t *sim = msim_job_sim(rec->job);
	uint64_t r = msim_device_reserved(msim_sim_device(sim));
	if (r <= rec->peak)
		return;
	/* A new peak: the state now, kept. */
	rec->peak = r;
	rec->peak_nent = rec->nent;
	rec->peak_nev = rec->evpos;
	rec->npb = 0;
	msim_policy_blocks(msim_sim_policy(sim), rec_block, rec);
	if (MSIM_GROW(rec->pblk, rec->cappblk, rec->nblk + 1, 1024)) {
		rec->oom = true;
		return;
	}
	if (rec->nblk)
		memcpy(rec->pblk, rec->blk, rec->nblk * sizeof(*rec->blk));
	rec->npblk = rec->nblk;
}

static void
rec_block(void *ctx, const msim_block_t *b)
{
	msim_snaprec_t *rec = ctx;
	if (MSIM_GROW(rec->pb, rec->cappb, rec->npb + 1, 256)) {
		rec->oom = true;
		return;
	}
	rec->pb[rec->npb++] = *b;
}

static int
rec_addr_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Removes [addr, addr + size) from the ranges (an unmap), splitting. */
static int
rec_unmap(rec_seg_t **g, size_t *n, size_t *cap, uint64_t addr,
	  uint64_t size)
{
	uint64_t end = addr + size;
	for (size_t i = 0; i < *n; i++) {
		rec_seg_t *s = &(*g)[i];
		uint64_t se = s->addr + s->size;
		if (end <= s->addr || addr >= se)
			continue;
		if (addr > s->addr && end < se) {
			if (MSIM_GROW(*g, *cap, *n + 1, 64))
				return MSIM_ENOMEM;
			s = &(*g)[i];
			(*g)[(*n)++] = (rec_seg_t){end, se - end, s->expandable};
			s->size = addr - s->addr;
		} else if (addr > s->addr) {
			s->size = addr - s->addr;
		} else if (end < se) {
			s->size = se - end;
			s->addr = end;
		} else {
			(*g)[i--] = (*g)[--*n];
		}
	}
	return 0;
}

/* The ranges the run holds at its end, from the device's events, sorted
 * and with an expandable segment's contiguous pages merged. */
static int
rec_ranges(msim_snaprec_t *rec, rec_seg_t **out, size_t *nout)
{
	size_t n;
	const msim_seg_event_t *ev =
		msim_device_events(msim_sim_device(msim_job_sim(rec->job)), &n);
	if (rec->at_peak)
		n = rec->peak_nev;
	rec_seg_t *g = NULL;
	size_t ng = 0, cap = 0;
	for (size_t i = 0; i < n; i++) {
		const msim_seg_event_t *v = &ev[i];
		if (v->action == MSIM_SEG_ALLOC || v->action == MSIM_SEG_MAP) {
			if (MSIM_GROW(g, cap, ng + 1, 64))
				goto nomem;
			g[ng++] = (rec_seg_t){v->addr, v->size,
					      v->action == MSIM_SEG_MAP};
		} else if ((v->action == MSIM_SEG_FREE ||
			    v->action == MSIM_SEG_UNMAP) &&
			   rec_unmap(&g, &ng, &cap, v->addr, v->size)) {
			goto nomem;
		}
	}
	if (ng)
		qsort(g, ng, sizeof(*g), rec_addr_cmp);
	size_t k = 0;
	for (size_t i = 0; i < ng; i++) {
		if (k && g[i].expandable && g[k - 1].expandable &&
		    g[k - 1].addr + g[k - 1].size == g[i].addr)
			g[k - 1].size += g[i].size;
		else
			g[k++] = g[i];
	}
	*out = g;
	*nout = k;
	return 0;
nomem:
	free(g);
	return MSIM_ENOMEM;
}

int
msim_snaprec_write(msim_snaprec_t *rec, const char *path, char *why,
		   size_t whylen)
{
	msim_sim_t *sim = msim_job_sim(rec->job);
	rec_drain(rec, rec->nent ? rec->ent[rec->nent - 1].time_us : 0);
	if (rec->at_peak) {
		/* The state at the peak, and the trace up to it. */
		rec->nent = rec->peak_nent;
		rec_blk_t *t = rec->blk;
		rec->blk = rec->pblk;
		rec->pblk = t;
		size_t tn = rec->nblk, tc = rec->capblk;
		rec->nblk = rec->npblk;
		rec->capblk = rec->cappblk;
		rec->npblk = tn;
		rec->cappblk = tc;
	} else {
		rec->npb = 0;
		msim_policy_blocks(msim_sim_policy(sim), rec_block, rec);
	}
	rec_seg_t *g = NULL;
	size_t ng = 0;
	msim_snapout_seg_t *segs = NULL;
	msim_snapout_block_t *blocks = NULL;
	uint64_t (*live)[2] = NULL; /* (addr, id) of the live blocks */
	size_t nlive = 0, nb = 0;
	int rc = MSIM_ENOMEM;
	if (rec->oom || rec_ranges(rec, &g, &ng))
		goto out;
	if (rec->npb)
		qsort(rec->pb, rec->npb, sizeof(*rec->pb), rec_addr_cmp);
	live = malloc((rec->nblk + 1) * sizeof(*live));
	segs = calloc(ng + 1, sizeof(*segs));
	/* Each segment's blocks, with a free block in each gap the policy
	 * did not list (blocks tile their segment in a snapshot). */
	blocks = malloc((2 * rec->npb + ng + 1) * sizeof(*blocks));
	if (!live || !segs || !blocks)
		goto out;
	for (size_t i = 0; i < rec->nblk; i++)
		if (rec->blk[i].live) {
			live[nlive][0] = rec->blk[i].addr;
			live[nlive++][1] = i;
		}
	if (nlive)
		qsort(live, nlive, sizeof(*live), rec_addr_cmp);
	size_t j = 0;
	for (size_t i = 0; i < ng; i++) {
		msim_snapout_seg_t *s = &segs[i];
		uint64_t at = g[i].addr, end = g[i].addr + g[i].size;
		*s = (msim_snapout_seg_t){.addr = g[i].addr, .size = g[i].size,
					  .expandable = g[i].expandable,
					  .blocks = blocks + nb};
		bool stream_set = false;
		while (j < rec->npb && rec->pb[j].addr < g[i].addr)
			j++;
		for (; j < rec->npb && rec->pb[j].addr < end; j++) {
			const msim_block_t *b = &rec->pb[j];
			if (b->addr > at)
				blocks[nb++] = (msim_snapout_block_t){
					at, b->addr - at, 0, MSIM_BLOCK_FREE,
					NULL};
			msim_snapout_block_t *o = &blocks[nb++];
			*o = (msim_snapout_block_t){b->addr, b->size, 0,
						    b->state, NULL};
			uint64_t key[2] = {b->addr, 0};
			const uint64_t (*hit)[2] = b->state == MSIM_BLOCK_FREE
				? NULL : bsearch(key, live, nlive,
						 sizeof(*live), rec_addr_cmp);
			if (hit) {
				const rec_blk_t *r = &rec->blk[(*hit)[1]];
				o->requested = r->requested;
				o->site = r->site;
				if (!stream_set) {
					s->stream = r->stream;
					stream_set = true;
				}
			} else if (b->state != MSIM_BLOCK_FREE) {
				o->requested = b->size;
			}
			at = b->addr + b->size;
		}
		if (at < end)
			blocks[nb++] = (msim_snapout_block_t){
				at, end - at, 0, MSIM_BLOCK_FREE, NULL};
		s->nblocks = (size_t)(blocks + nb - s->blocks);
	}
	const char *conf = msim_job_result(rec->job)->params;
	int ix = msim_params_index(msim_job_params(rec->job),
				   "expandable_segments");
	msim_snapout_t so = {
		.entries = rec->ent, .nentries = rec->nent,
		.segs = segs, .nsegs = ng, .alloc_conf = conf,
		.expandable = ix >= 0 && msim_job_params(rec->job)->v[ix].b,
	};
	rc = msim_snapout_write(path, &so, why, whylen);
	goto done;
out:
	snprintf(why, whylen, "%s", msim_strerror(MSIM_ENOMEM));
done:
	free(g);
	free(segs);
	free(blocks);
	free(live);
	return rc;
}

void
msim_snaprec_destroy(msim_snaprec_t *rec)
{
	if (!rec)
		return;
	free(rec->ent);
	free(rec->blk);
	free(rec->pb);
	free(rec->pblk);
	free(rec);
}
