/*
 * Convert (lab/convert.h): the passes over the input into one writer.
 */
#include <config.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "lab/convert.h"
#include "sim/error.h"
#include "sim/file.h"

/* The span of one pass: addresses and times. */
typedef struct convert_span_s {
	uint64_t lo, hi, t_lo, t_hi;     /* of the first pass */
	uint64_t addr_step, time_step;   /* added each pass */
} convert_span_t;

static void
convert_note(convert_span_t *sp, const msim_entry_t *e)
{
	if (e->addr && e->action != MSIM_ACT_OOM) {
		sp->lo = e->addr < sp->lo ? e->addr : sp->lo;
		sp->hi = e->addr + e->size > sp->hi ? e->addr + e->size
						    : sp->hi;
	}
	sp->t_lo = e->time_us < sp->t_lo ? e->time_us : sp->t_lo;
	sp->t_hi = e->time_us > sp->t_hi ? e->time_us : sp->t_hi;
}

/* Where the seeded start's allocations without a recorded address (the
 * fillers that stand for free pieces, a large segment's whole-size malloc)
 * are placed: above any CUDA virtual address, one apart from the next. */
#define CONVERT_SYNTH_BASE (UINT64_C(1) << 56)
#define CONVERT_SYNTH_ALIGN (UINT64_C(2) << 20)

/* One seeded block's row, by its id (msim_req_t.id). */
typedef struct convert_blk_s {
	uint64_t addr, size;
	msim_stream_t stream;
} convert_blk_t;

/* The formats that hold every row of a seeded start (segment, pool and
 * reset_peaks rows). */
static bool
convert_holds_seed(const msim_trace_writer_t *w)
{
	const char *name = msim_trace_writer_format(w)->name;
	return !strcmp(name, "csv") || !strcmp(name, "bin");
}

/* The seeded request q as an entry into e (blk: the seeded blocks by id,
 * n of them; *synth: the next synthesized address).  Returns 0, 1 for a
 * request that has no row, or MSIM_ENOMEM. */
static int
convert_seed_entry(const msim_req_t *q, uint64_t time_us,
		   convert_blk_t **blk, size_t *n, uint64_t *synth,
		   msim_entry_t *e)
{
	*e = (msim_entry_t){.time_us = time_us, .addr = q->addr,
			    .size = q->size, .stream = q->stream};
	switch (q->kind) {
	case MSIM_REQ_ALLOC:
		if (q->id >= *n) {
			size_t m = (size_t)q->id + 1 > 2 * *n ? q->id + 1
							      : 2 * *n;
			convert_blk_t *b = realloc(*blk, m * sizeof(*b));
			if (!b)
				return MSIM_ENOMEM;
			memset(b + *n, 0, (m - *n) * sizeof(*b));
			*blk = b;
			*n = m;
		}
		if (!e->addr) {
			e->addr = *synth;
			*synth += (q->size + 2 * CONVERT_SYNTH_ALIGN - 1) &
				  ~(CONVERT_SYNTH_ALIGN - 1);
		}
		(*blk)[q->id] = (convert_blk_t){e->addr, e->size, e->stream};
		e->action = MSIM_ACT_ALLOC;
		e->tag = q->tag; /* a seeded block's site (its snapshot
				  * frames): csv holds it, bin no tags */
		return 0;
	case MSIM_REQ_FREE:
		if (q->id >= *n)
			return 1; /* not a seeded block: cannot happen */
		e->addr = (*blk)[q->id].addr;
		e->size = (*blk)[q->id].size;
		e->stream = (*blk)[q->id].stream;
		e->action = MSIM_ACT_FREE_COMPLETED;
		return 0;
	case MSIM_REQ_SEGMENT_HINT:
		e->action = MSIM_ACT_SEGMENT_ALLOC;
		return 0;
	case MSIM_REQ_RESET_PEAKS:
		e->action = MSIM_ACT_RESET_PEAKS;
		e->addr = e->size = 0;
		return 0;
	case MSIM_REQ_POOL_CREATE:
		/* pool_create's size: its flags (traces/trace.h) */
		e->size = (q->flags & MSIM_REQF_OWN_ALLOC ? 1 : 0) |
			  (q->flags & MSIM_REQF_USE_ON_OOM ? 2 : 0) |
			  (q->flags & MSIM_REQF_NO_SPLIT ? 4 : 0);
		e->action = MSIM_ACT_POOL_CREATE;
		return 0;
	case MSIM_REQ_POOL_BEGIN:
	case MSIM_REQ_POOL_END:
		e->size = 0;
		e->action = (uint8_t)(MSIM_ACT_POOL_BEGIN +
				      (q->kind - MSIM_REQ_POOL_BEGIN));
		return 0;
	case MSIM_REQ_POOL_RELEASE:
		e->size = q->flags & MSIM_REQF_EMPTY_POOL ? 1 : 0;
		e->action = MSIM_ACT_POOL_RELEASE;
		return 0;
	default:
		return 1;
	}
}

/*
 * A partial history's seeded start (msim_trace_seed_requests()) as rows
 * before the first entry, at time_us, at addresses shifted by shift (one
 * pass only): the replay of the output then begins as the replay of the
 * input does.
 * Returns 0 or an error with why (a format that cannot hold them).
 */
static int
convert_seed(const msim_convert_spec_t *s, msim_trace_t *t,
	     msim_trace_writer_t *w, uint64_t time_us, uint64_t shift,
	     msim_convert_result_t *res, char *why, size_t whylen)
{
	size_t nq;
	const msim_req_t *q = msim_trace_seed_requests(t, &nq);
	if (!nq)
		return 0;
	if (s->repeat > 1) {
		/* a second pass would allocate fillers (free pieces) while
		 * the first pass's blocks live: peaks no replay had */
		snprintf(why, whylen, "--repeat: %s is a partial history; its "
			 "seeded start is written once (--repeat 1)", s->in);
		return MSIM_EINVAL;
	}
	if (!convert_holds_seed(w)) {
		msim_trace_seed_t sd;
		msim_trace_seeding(t, &sd);
		snprintf(why, whylen, "%s: the %s format cannot hold the seeded "
			 "start of %s's partial history (%" PRIu64 " blocks "
			 "allocated before its history began); convert to "
			 "csv or bin", s->out, msim_trace_writer_format(w)->name,
			 s->in, sd.from_frees + sd.from_snapshot);
		return MSIM_EINVAL;
	}
	convert_blk_t *blk = NULL;
	size_t nblk = 0;
	uint64_t synth = CONVERT_SYNTH_BASE;
	int rc = 0;
	for (size_t i = 0; !rc && i < nq; i++) {
		msim_entry_t e;
		rc = convert_seed_entry(&q[i], time_us, &blk, &nblk, &synth,
					&e);
		if (rc == 1) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		if (e.addr && e.action < MSIM_ACT_POOL_CREATE)
			e.addr += shift; /* a pool row's addr is its id */
		if ((rc = msim_trace_writer_put(w, &e)))
			snprintf(why, whylen, "%s", msim_trace_writer_errmsg(w));
		else
			res->entries++;
	}
	free(blk);
	if (rc == MSIM_ENOMEM && !why[0])
		snprintf(why, whylen, "out of memory");
	return rc;
}

/* One pass over the input into w. */
static int
convert_pass(const msim_convert_spec_t *s, msim_trace_writer_t *w,
	     uint64_t pass, convert_span_t *sp, msim_convert_result_t *res,
	     char *why, size_t whylen)
{
	msim_trace_t *t;
	int rc = msim_trace_open(s->in, s->opt, &t, why, whylen);
	if (rc)
		return rc;
	snprintf(res->from, sizeof(res->from), "%s",
		 msim_trace_format_name(t));
	const char *conf = msim_trace_alloc_conf(t);
	if (pass == 0 && conf && *conf &&
	    strcmp(msim_trace_writer_format(w)->name, "csv"))
		snprintf(res->dropped_conf, sizeof(res->dropped_conf), "%s",
			 conf);
	msim_trace_writer_set_tags(w, t); /* categories and sites */
	/* A partial history: its seeded start first, at the first entry's
	 * time. */
	msim_entry_t e;
	bool first = true;
	if ((rc = msim_trace_prescan(t))) {
		snprintf(why, whylen, "%s", msim_trace_errmsg(t));
		msim_trace_close(t);
		return rc;
	}
	while ((rc = msim_trace_next_entry(t, &e)) == 1) {
		if (first) {
			first = false;
			int src = convert_seed(s, t, w, e.time_us +
					       pass * sp->time_step,
					       pass * sp->addr_step, res, why,
					       whylen);
			if (src) {
				rc = src;
				break;
			}
		}
		if (pass == 0)
			convert_note(sp, &e);
		if (e.addr && e.action != MSIM_ACT_OOM)
			e.addr += pass * sp->addr_step;
		e.time_us += pass * sp->time_step;
		int prc = msim_trace_writer_put(w, &e);
		if (prc) {
			snprintf(why, whylen, "%s",
				 msim_trace_writer_errmsg(w));
			rc = prc < 0 ? prc : MSIM_EIO;
			break;
		}
		res->entries++;
	}
	if (rc < 0 && !why[0])
		snprintf(why, whylen, "%s", msim_trace_errmsg(t));
	msim_trace_writer_set_tags(w, NULL);
	msim_trace_close(t);
	return rc < 0 ? rc : 0;
}

int
msim_convert_run(const msim_convert_spec_t *s, msim_convert_result_t *res,
		 char *why, size_t whylen)
{
	memset(res, 0, sizeof(*res));
	why[0] = '\0';
	if (msim_same_file(s->in, s->out)) {
		snprintf(why, whylen, "%s: is the input trace; write to "
			 "another file", s->out);
		return MSIM_EINVAL;
	}
	msim_trace_writer_t *w;
	int rc = msim_trace_writer_open(s->out, s->to, &w, why, whylen);
	if (rc)
		return rc;
	convert_span_t sp = {.lo = UINT64_MAX, .t_lo = UINT64_MAX};
	for (uint64_t pass = 0; !rc && pass < s->repeat; pass++) {
		rc = convert_pass(s, w, pass, &sp, res, why, whylen);
		if (rc || pass > 0 || sp.hi <= sp.lo)
			continue;
		/* Each pass: fresh addresses above the previous pass's
		 * (2 MiB aligned), and a clock that goes on. */
		uint64_t align = 2u << 20;
		sp.addr_step = (sp.hi - sp.lo + align + align - 1) &
			       ~(align - 1);
		sp.time_step = sp.t_hi - sp.t_lo + 1;
		if (s->repeat > 1 &&
		    (UINT64_MAX - sp.hi) / sp.addr_step < s->repeat) {
			snprintf(why, whylen, "--repeat: %" PRIu64 " passes run "
				 "out of addresses", s->repeat);
			rc = MSIM_EINVAL;
		}
	}
	if (rc) {
		msim_trace_writer_abort(w); /* the old content stays */
		return rc;
	}
	snprintf(res->to, sizeof(res->to), "%s",
		 msim_trace_writer_format(w)->name);
	return msim_trace_writer_close(w, why, whylen);
}
