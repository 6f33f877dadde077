/*
 * Info (lab/info.h): one streaming pass over a trace, and a snapshot's
 * segments summed.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_histogram.h>

#include "lab/info.h"
#include "sim/error.h"
#include "sim/grow.h"

/* The pass: live size by request id, streams seen. */
typedef struct info_pass_s {
	msim_info_t *out;
	uint64_t *sizes;
	size_t nsizes;
	msim_stream_t streams[MSIM_INFO_MAX_STREAMS];
	gsl_histogram *h;
} info_pass_t;

/* r's block is live from now on. */
static void
info_live(info_pass_t *p, const msim_req_t *r)
{
	msim_info_t *in = p->out;
	p->sizes[r->id] = r->size;
	in->live += r->size;
	in->nlive++;
	if (in->live > in->peak)
		in->peak = in->live;
}

static int
info_alloc(info_pass_t *p, const msim_req_t *r)
{
	msim_info_t *in = p->out;
	if (r->flags & MSIM_REQF_FILLER)
		return 0; /* stands for a block that was free */
	if (MSIM_GROW_ZERO(p->sizes, p->nsizes, (size_t)r->id + 1, 1024))
		return MSIM_ENOMEM;
	if (r->flags & MSIM_REQF_SEED) {
		/* Allocated before the history began: live, not counted. */
		info_live(p, r);
		return 0;
	}
	in->allocs++;
	in->bytes += r->size;
	gsl_histogram_increment(p->h, log2((double)r->size));
	int i;
	for (i = 0; i < in->nstreams; i++)
		if (p->streams[i] == r->stream)
			break;
	if (i == in->nstreams) {
		if (in->nstreams < MSIM_INFO_MAX_STREAMS)
			p->streams[in->nstreams++] = r->stream;
		else
			in->more_streams = true;
	}
	if (r->flags & MSIM_REQF_EXPECT_OOM)
		return 0; /* never live */
	info_live(p, r);
	return 0;
}

static void
info_snap_sum(const msim_snap_segment_t *g, size_t n, msim_info_snap_t *s)
{
	memset(s, 0, sizeof(*s));
	s->nsegs = n;
	for (size_t i = 0; i < n; i++, g++) {
		s->reserved += g->total_size;
		s->allocated += g->allocated_size;
		s->active += g->active_size;
		s->requested += g->requested_size;
		if (!g->large) {
			s->nsmall++;
			s->small_reserved += g->total_size;
		}
		s->nexpandable += g->expandable;
		s->nblocks += g->nblocks;
		uint64_t at = g->addr;
		bool tiled = true;
		for (size_t k = 0; k < g->nblocks; k++) {
			const msim_snap_block_t *b = &g->blocks[k];
			s->nstate[b->state]++;
			s->state_bytes[b->state] += b->size;
			if (b->state != MSIM_SNAP_INACTIVE)
				s->active_requested += b->requested;
			tiled = tiled && b->addr == at;
			at = b->addr + b->size;
		}
		/* Expandable segments list only their mapped blocks. */
		if (!g->expandable && (!tiled || at != g->addr + g->total_size))
			s->untiled++;
	}
}

/* One request of the pass. */
static int
info_req(info_pass_t *p, const msim_req_t *r)
{
	msim_info_t *in = p->out;
	if (r->kind == MSIM_REQ_SEGMENT_HINT ||
	    r->kind == MSIM_REQ_RESET_PEAKS ||
	    (r->flags & (MSIM_REQF_SEED | MSIM_REQF_FILLER)))
		return r->kind == MSIM_REQ_ALLOC ? info_alloc(p, r) : 0;
	/* Requests as a run counts them: allocs and frees (not hidden
	 * empty_cache() calls or free_requested rows). */
	if (r->kind != MSIM_REQ_ALLOC && r->kind != MSIM_REQ_FREE)
		return 0;
	in->requests++;
	if (r->kind == MSIM_REQ_ALLOC)
		return info_alloc(p, r);
	in->frees++;
	if (r->id < p->nsizes && p->sizes[r->id]) {
		in->live -= p->sizes[r->id];
		p->sizes[r->id] = 0;
		in->nlive--;
	}
	return 0;
}

/* What the trace says of itself once read. */
static int
info_end(msim_info_t *in, char *why, size_t whylen)
{
	msim_trace_t *t = in->trace;
	msim_trace_empty_caches(t, &in->empty_found, &in->empty_maybe);
	const msim_snap_segment_t *segs;
	size_t nsegs;
	if (msim_trace_segments(t, &segs, &nsegs)) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	info_snap_sum(segs, nsegs, &in->snap);
	/* A snapshot memsim wrote (convert) has an empty state. */
	in->has_state = nsegs > 0;
	msim_trace_tally(t, &in->tally);
	const msim_trace_tally_t *tl = &in->tally;
	in->duration_s = tl->entries ? (tl->last_us - tl->first_us) / 1e6
				     : 0.0;
	in->timed = tl->untimed == 0; /* PyTorch 2.0 wrote no time_us */
	msim_trace_seeding(t, &in->seed);
	in->conf = msim_trace_alloc_conf(t);
	return 0;
}

int
msim_info_run(const char *path, const msim_trace_options_t *opt,
	      msim_info_t *out, char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	info_pass_t p = {.out = out};
	int rc = msim_trace_open(path, opt, &out->trace, why, whylen);
	if (rc)
		return rc;
	if (!(p.h = gsl_histogram_alloc(MSIM_INFO_BINS)) ||
	    gsl_histogram_set_ranges_uniform(p.h, 0, MSIM_INFO_BINS)) {
		snprintf(why, whylen, "out of memory");
		rc = MSIM_ENOMEM;
	}
	msim_req_t r;
	int more = 0;
	while (!rc && (more = msim_trace_next(out->trace, &r)) == 1)
		if ((rc = info_req(&p, &r)))
			snprintf(why, whylen, "out of memory");
	if (!rc && more < 0) {
		snprintf(why, whylen, "%s", msim_trace_errmsg(out->trace));
		rc = more;
	}
	if (!rc)
		rc = info_end(out, why, whylen);
	for (size_t k = 0; !rc && k < MSIM_INFO_BINS; k++)
		out->hist[k] = gsl_histogram_get(p.h, k);
	if (p.h)
		gsl_histogram_free(p.h);
	free(p.sizes);
	if (rc)
		msim_info_clear(out);
	return rc;
}

void
msim_info_clear(msim_info_t *info)
{
	msim_trace_close(info->trace);
	info->trace = NULL;
}
