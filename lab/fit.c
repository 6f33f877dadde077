/*
 * Fit (lab/fit.h): the bisection over recordings, each replayed as a job
 * in this process, then the candidates or tune's search on the winner.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/fit.h"
#include "lab/job.h"
#include "policies/registry.h"
#include "sim/device.h"
#include "sim/error.h"
#include "sim/units.h"

int
msim_fit_parse_vary(const char *text, char *name, size_t n, long *lo,
		    long *hi, char *why, size_t whylen)
{
	const char *eq = strchr(text, '=');
	char *end;
	if (!eq || eq == text || (size_t)(eq - text) >= n)
		goto bad;
	memcpy(name, text, (size_t)(eq - text));
	name[eq - text] = '\0';
	errno = 0;
	*lo = strtol(eq + 1, &end, 10);
	if (errno || end == eq + 1 || strncmp(end, "..", 2))
		goto bad;
	const char *h = end + 2;
	*hi = strtol(h, &end, 10);
	if (errno || end == h || *end || *lo > *hi) {
		snprintf(why, whylen, "--vary '%s': expected integers LO <= HI",
			 text);
		return MSIM_EINVAL;
	}
	return 0;
bad:
	snprintf(why, whylen, "--vary '%s': expected NAME=LO..HI", text);
	return MSIM_EINVAL;
}

static void
fit_note(const msim_fit_spec_t *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
fit_note(const msim_fit_spec_t *s, const char *fmt, ...)
{
	if (!s->note)
		return;
	char line[4400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->note(s->ctx, line);
}

/* Replays trace under the cap with conf, as `memsim run --cap` does. */
static int
fit_replay(const msim_fit_spec_t *s, const char *trace, const char *conf,
	   msim_fit_point_t *p, char *why, size_t whylen)
{
	msim_job_spec_t js = {
		.trace = trace, .policy = s->policy ? s->policy : MSIM_POLICY_DEFAULT,
		.conf = conf, .cap = s->cap, .prefetch = true,
		.capacity = s->capacity, .context = s->context,
	};
	msim_job_t *job = NULL;
	msim_job_err_t err;
	int rc = msim_job_open(&js, false, &job, &err);
	if (!rc)
		rc = msim_job_run(job, &err);
	if (rc) {
		static const char *const part[] = {
			[MSIM_JOB_EPOLICY] = "--policy: ",
			[MSIM_JOB_EPARAMS] = "--alloc-conf: ",
			[MSIM_JOB_ECAP] = "--cap: ",
		};
		const char *what = err.part > 0 && err.part <= MSIM_JOB_ECAP &&
					   part[err.part] ? part[err.part] : "";
		snprintf(why, whylen, "replaying %s: %s%s", trace, what,
			 err.msg);
	} else {
		const msim_job_result_t *r = msim_job_result(job);
		p->reserved = r->st.reserved_bytes[MSIM_POOL_ALL].peak;
		p->allocated = r->st.allocated_bytes[MSIM_POOL_ALL].peak;
		p->oom = r->st.num_ooms > 0;
	}
	msim_job_destroy(job);
	return rc;
}

/* The trace of value: the pattern's, or the recording's in dir. */
static int
fit_trace(const msim_fit_spec_t *s, long value, char *trace, size_t n)
{
	if (!s->pattern) {
		snprintf(trace, n, "%s/%s-%ld.csv", s->dir, s->name, value);
		return 0;
	}
	char val[32];
	snprintf(val, sizeof(val), "%ld", value);
	const char *v = val;
	char *pat = (char *)s->pattern;
	char **p = msim_record_subst(&pat, 1, &s->name, &v, 1);
	if (!p)
		return MSIM_ENOMEM;
	snprintf(trace, n, "%s", p[0]);
	msim_record_subst_free(p, 1);
	return 0;
}

/* Records the command at value into trace.  Returns 0, 1 when the
 * recording failed (why says how: a failure at that value, the search
 * goes on), or a negative MSIM_E* when it cannot go on (no recorder, an
 * output refused, memsim interrupted). */
static int
fit_record(const msim_fit_spec_t *s, long value, const char *trace,
	   char *why, size_t whylen)
{
	char val[32];
	snprintf(val, sizeof(val), "%ld", value);
	const char *v = val;
	char **cmd = msim_record_subst(s->cmd, s->ncmd, &s->name, &v, 1);
	if (!cmd) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	fit_note(s, "recording %s=%ld", s->name, value);
	char rwhy[1024];
	int rc = msim_record_exec(&s->rec, trace, s->ropt, s->nropt, cmd,
				  s->ncmd, rwhy, sizeof(rwhy));
	msim_record_subst_free(cmd, s->ncmd);
	if (rc < 0) {
		snprintf(why, whylen, "record: %s", rwhy);
		return rc;
	}
	if (rc && msim_record_signal()) {
		snprintf(why, whylen, "recording %s=%ld: %s", s->name, value,
			 rwhy);
		return MSIM_EIO;
	}
	if (rc) {
		snprintf(why, whylen, "recording %s=%ld failed (exit %d)%s%s",
			 s->name, value, rc, *rwhy ? ": " : "", rwhy);
		return 1;
	}
	return 0;
}

/* Keeps what value gave, for fit_growth(). */
static int
fit_seen(msim_fit_result_t *res, long value, const msim_fit_point_t *p)
{
	msim_fit_seen_t *n = realloc(res->seen, (res->nseen + 1) * sizeof(*n));
	if (!n)
		return MSIM_ENOMEM;
	res->seen = n;
	n[res->nseen++] = (msim_fit_seen_t){value, *p};
	return 0;
}

/* Records (or finds) and replays value; *fits says whether it fits. */
static int
fit_try(const msim_fit_spec_t *s, msim_fit_result_t *res, long value,
	msim_fit_point_t *p, bool *fits, char *why, size_t whylen)
{
	char trace[4096];
	memset(p, 0, sizeof(*p));
	int rc = fit_trace(s, value, trace, sizeof(trace));
	if (rc) {
		snprintf(why, whylen, "out of memory");
		return rc;
	}
	if (s->pattern && access(trace, R_OK) != 0) {
		snprintf(why, whylen, "%s: %s", trace, strerror(errno));
		return MSIM_EIO;
	}
	if (!s->pattern && (rc = fit_record(s, value, trace, why, whylen))) {
		if (rc < 0)
			return rc;
		/* a failure at this value: counted as not fitting */
		fit_note(s, "%s; counted as not fitting", why);
		p->failed = true;
		res->failed++;
		*fits = false;
		return fit_seen(res, value, p);
	}
	res->tries++;
	if ((rc = fit_replay(s, trace, NULL, p, why, whylen)))
		return rc;
	if (fit_seen(res, value, p)) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	char mb[32];
	if (s->pattern)
		snprintf(mb, sizeof(mb), "%" PRId64, p->reserved);
	else
		msim_format_bytes((uint64_t)p->reserved, mb, sizeof(mb));
	fit_note(s, "%s=%ld: peak reserved %s%s", s->name, value, mb,
		 p->oom ? ", out of memory" : "");
	*fits = !p->oom;
	return 0;
}

/* The bisection: lo, hi, then the middle while a fits and b does not. */
static int
fit_bisect(const msim_fit_spec_t *s, msim_fit_result_t *res, char *why,
	   size_t whylen)
{
	msim_fit_point_t p;
	bool fits;
	int rc = fit_try(s, res, s->lo, &p, &fits, why, whylen);
	if (rc || !fits)
		return rc;
	res->fits = true;
	res->best = s->lo;
	res->at_best = p;
	if (s->lo < s->hi &&
	    (rc = fit_try(s, res, s->hi, &p, &fits, why, whylen)))
		return rc;
	if (s->lo < s->hi && fits) {
		res->best = s->hi;
		res->at_best = p;
		return 0;
	}
	long a = s->lo, b = s->hi; /* a fits, b does not */
	/* b - a in unsigned arithmetic: no overflow over any long range */
	while ((unsigned long)b - (unsigned long)a > 1) {
		long m = a + (long)(((unsigned long)b - (unsigned long)a) / 2);
		if ((rc = fit_try(s, res, m, &p, &fits, why, whylen)))
			return rc;
		if (fits) {
			a = m;
			res->at_best = p;
		} else {
			b = m;
		}
	}
	res->best = a;
	return 0;
}

/* The candidates on the winner: the lowest peak reserved without an OOM
 * beats the defaults. */
static int
fit_candidates(const msim_fit_spec_t *s, msim_fit_result_t *res, char *why,
	       size_t whylen)
{
	res->cand = calloc(s->nconf, sizeof(*res->cand));
	if (!res->cand) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	for (size_t i = 0; i < s->nconf; i++) {
		msim_fit_point_t *c = &res->cand[i];
		int rc = fit_replay(s, res->trace, s->confs[i], c, why, whylen);
		if (rc)
			return rc;
		if (!c->oom && c->reserved < res->conf_best.reserved) {
			res->best_conf = i;
			res->conf_best = *c;
		}
	}
	return 0;
}

static int
fit_by_value(const void *a, const void *b)
{
	long x = ((const msim_fit_seen_t *)a)->value;
	long y = ((const msim_fit_seen_t *)b)->value;
	return (x > y) - (x < y);
}

/* Whether the peaks seen grow with the value, as the bisection assumes:
 * a larger value with a lower peak allocated (reserved steps with the
 * allocator's rounding), or the same peaks at every value (the value may
 * not reach the memory at all) is told in res->growth.  Values that ran
 * out of memory are left out: their peaks stop at the failed request. */
static void
fit_growth(const msim_fit_spec_t *s, msim_fit_result_t *res)
{
	qsort(res->seen, res->nseen, sizeof(*res->seen), fit_by_value);
	const msim_fit_seen_t *prev = NULL;
	size_t n = 0;
	bool same = true;
	char *g = res->growth;
	size_t gl = sizeof(res->growth);
	for (size_t i = 0; i < res->nseen; i++) {
		const msim_fit_seen_t *c = &res->seen[i];
		if (c->p.failed || c->p.oom)
			continue;
		if (prev && !g[0] && c->p.allocated < prev->p.allocated)
			snprintf(g, gl, "the peaks do not grow with %s (%s=%ld: "
				 "%" PRId64 " bytes allocated, %s=%ld: %"
				 PRId64 "); the search assumes they do, so the "
				 "answer may be wrong", s->name, s->name,
				 prev->value, prev->p.allocated, s->name,
				 c->value, c->p.allocated);
		same &= !prev || (c->p.reserved == prev->p.reserved &&
				  c->p.allocated == prev->p.allocated);
		prev = c;
		n++;
	}
	if (!g[0] && same && n > 1)
		snprintf(g, gl, "the peaks are the same at every %s tried: %s "
			 "may not change the memory (is {%s} used by the "
			 "script?)", s->name, s->name, s->name);
}

int
msim_fit_run(const msim_fit_spec_t *spec, msim_fit_result_t *res,
	     char *why, size_t whylen)
{
	memset(res, 0, sizeof(*res));
	res->best = spec->lo > LONG_MIN ? spec->lo - 1 : LONG_MIN;
	res->best_conf = spec->nconf;
	int rc = fit_bisect(spec, res, why, whylen);
	if (!rc)
		fit_growth(spec, res);
	if (!rc && res->growth[0])
		fit_note(spec, "%s", res->growth);
	if (rc || !res->fits)
		return rc;
	if ((rc = fit_trace(spec, res->best, res->trace, sizeof(res->trace)))) {
		snprintf(why, whylen, "out of memory");
		return rc;
	}
	res->conf_best = res->at_best;
	if (spec->nconf)
		return fit_candidates(spec, res, why, whylen);
	if (!spec->tune_db)
		return 0;
	msim_tune_spec_t ts = {
		.trace = res->trace, .cap = spec->cap, .db_path = spec->tune_db,
		.grid = msim_tune_grid, .ngrid = MSIM_TUNE_NGRID,
		.jobs = spec->tune_jobs, .progress = spec->tune_progress,
		.ctx = spec->tune_progress_ctx,
		.capacity = spec->context ? (spec->capacity ? spec->capacity
					     : MSIM_H200_BYTES) -
						    spec->context
					  : spec->capacity,
	};
	if (ts.capacity && ts.cap > ts.capacity)
		ts.cap = ts.capacity; /* the context's bytes are not there */
	res->tuned = msim_tune_run(&ts, &res->tune, res->tune_err,
				   sizeof(res->tune_err)) == 0;
	if (res->tuned)
		res->tune_err[0] = '\0';
	return 0;
}

void
msim_fit_clear(msim_fit_result_t *res)
{
	free(res->cand);
	res->cand = NULL;
	free(res->seen);
	res->seen = NULL;
	res->nseen = 0;
}
