/*
 * Convert (lab/convert.h): the passes over the input into one writer.
 */
#include <config.h>

#include <inttypes.h>
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
	msim_trace_writer_set_tags(w, t); /* categories and sites */
	msim_entry_t e;
	while ((rc = msim_trace_next_entry(t, &e)) == 1) {
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
