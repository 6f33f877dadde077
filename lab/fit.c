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
#include "lab/print.h"
#include "lab/recserver.h"
#include "lab/symrec.h"
#include "plots/plot.h"
#include "policies/registry.h"
#include "sim/device.h"
#include "sim/error.h"
#include "sim/units.h"
#include "traces/symtrace.h"

/* A device no recording runs out of (1 PiB): what a value needs. */
#define FIT_HUGE ((uint64_t)1 << 50)

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

/* Replays trace with conf: under the cap, as `memsim run --cap` does,
 * or (uncapped) on a device too large to run out, for what it needs. */
static int
fit_replay(const msim_fit_spec_t *s, const char *trace, const char *conf,
	   bool uncapped, msim_fit_point_t *p, char *why, size_t whylen)
{
	msim_job_spec_t js = {
		.trace = trace, .policy = s->policy ? s->policy : MSIM_POLICY_DEFAULT,
		.conf = conf, .cap = uncapped ? 0 : s->cap, .prefetch = true,
		.capacity = uncapped ? FIT_HUGE : s->capacity,
		.context = uncapped ? 0 : s->context,
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

/* The search's state: the recorder's fork server (NULL: each value
 * recorded alone) and the why of the caller. */
typedef struct fit_state_s {
	const msim_fit_spec_t *s;
	msim_fit_result_t *res;
	msim_recserver_t *srv;
	char *why;
	size_t whylen;
	/* The symbolic trace and where it holds (lab/symrec.h). */
	msim_symrec_t sym;
} fit_state_t;

/* What a recording's exit status rc (msim_record_exec()'s) means: 0, 1
 * when the recording failed (st->why says how: a failure at that value,
 * the search goes on), or a negative MSIM_E* when it cannot go on (no
 * recorder, an output refused, memsim interrupted). */
static int
fit_recorded(fit_state_t *st, long value, int rc, const char *rwhy)
{
	if (rc < 0) {
		snprintf(st->why, st->whylen, "record: %s", rwhy);
		return rc;
	}
	if (rc && msim_record_signal()) {
		snprintf(st->why, st->whylen, "recording %s=%ld: %s",
			 st->s->name, value, rwhy);
		return MSIM_EIO;
	}
	if (rc) {
		snprintf(st->why, st->whylen, "recording %s=%ld failed (exit "
			 "%d)%s%s", st->s->name, value, rc, *rwhy ? ": " : "",
			 rwhy);
		return 1;
	}
	return 0;
}

/* The point of value on the curve, or NULL. */
static msim_fit_curve_pt_t *
fit_find(msim_fit_result_t *res, long value)
{
	for (size_t i = 0; i < res->ncurve; i++)
		if (res->curve[i].value == value)
			return &res->curve[i];
	return NULL;
}

/* Whether a value tried fits: its replay under the cap ran, and without
 * running out of memory. */
static bool
fit_fits(const msim_fit_curve_pt_t *c)
{
	return !c->capped.oom && !c->capped.failed;
}

/* Puts pt on the curve, kept in the order of the values. */
static int
fit_add(fit_state_t *st, const msim_fit_curve_pt_t *pt)
{
	msim_fit_result_t *res = st->res;
	msim_fit_curve_pt_t *nc = realloc(res->curve, (res->ncurve + 1) *
					  sizeof(*nc));
	if (!nc) {
		snprintf(st->why, st->whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	res->curve = nc;
	size_t k = res->ncurve++;
	while (k > 0 && nc[k - 1].value > pt->value) {
		nc[k] = nc[k - 1];
		k--;
	}
	nc[k] = *pt;
	return 0;
}

/* The end of value's recording: rc and rwhy as msim_record_exec() says
 * them.  A failure is a failure at that value (told, counted as not
 * fitting, on the curve) and *bad is set; 0, or a negative MSIM_E* when
 * the search cannot go on. */
static int
fit_ended(fit_state_t *st, long value, int rc, const char *rwhy, bool *bad)
{
	if ((rc = fit_recorded(st, value, rc, rwhy)) <= 0)
		return rc;
	fit_note(st->s, "%s; counted as not fitting", st->why);
	st->why[0] = '\0';
	st->res->failed++;
	*bad = true;
	msim_fit_curve_pt_t pt = {.value = value, .capped.failed = true};
	return fit_add(st, &pt);
}

/* Records the command at values[0..n) into traces[], at once through the
 * fork server (n at most its jobs), else one after another; bad[i] says
 * that values[i] failed. */
static int
fit_record(fit_state_t *st, const long *values, char (*traces)[4096],
	   size_t n, bool *bad)
{
	const msim_fit_spec_t *s = st->s;
	int rc = 0;
	char rwhy[1024];
	for (size_t i = 0; i < n && !rc; i++) {
		char val[32];
		snprintf(val, sizeof(val), "%ld", values[i]);
		const char *v = val;
		char **cmd = msim_record_subst(s->cmd, s->ncmd, &s->name, &v,
					       1);
		if (!cmd) {
			snprintf(st->why, st->whylen, "out of memory");
			rc = MSIM_ENOMEM;
			break;
		}
		fit_note(s, "recording %s=%ld", s->name, values[i]);
		if (st->srv)
			rc = msim_recserver_submit(st->srv, (int)i, traces[i],
						   s->ropt, s->nropt, cmd,
						   s->ncmd, rwhy, sizeof(rwhy));
		else
			rc = msim_record_exec(&s->rec, traces[i], s->ropt,
					      s->nropt, cmd, s->ncmd, rwhy,
					      sizeof(rwhy));
		msim_record_subst_free(cmd, s->ncmd);
		if (rc && (rc < 0 || !st->srv))
			rc = fit_ended(st, values[i], rc, rwhy, &bad[i]);
	}
	/* the answers of the server, each failure told (on an error, the
	 * rest are ended with the server) */
	while (!rc && st->srv && msim_recserver_running(st->srv)) {
		int id, r = msim_recserver_wait(st->srv, &id, rwhy,
						sizeof(rwhy));
		if (r < 0 && id < 0)
			return fit_recorded(st, values[0], r, rwhy);
		if (r)
			rc = fit_ended(st, values[id], r, rwhy, &bad[id]);
	}
	return rc;
}

/* Replays value's trace (under the cap, then uncapped) onto the curve. */
static int
fit_point(fit_state_t *st, long value, const char *trace)
{
	const msim_fit_spec_t *s = st->s;
	msim_fit_point_t capped = {0}, need = {0};
	int rc = fit_replay(s, trace, NULL, false, &capped, st->why,
			    st->whylen);
	if (!rc)
		rc = fit_replay(s, trace, NULL, true, &need, st->why,
				st->whylen);
	msim_fit_curve_pt_t pt = {.value = value, .capped = capped,
				  .reserved = need.reserved,
				  .allocated = need.allocated};
	if (rc || (rc = fit_add(st, &pt)))
		return rc;
	st->res->tries++;
	char mb[32];
	if (s->pattern)
		snprintf(mb, sizeof(mb), "%" PRId64, capped.reserved);
	else
		msim_format_bytes((uint64_t)capped.reserved, mb, sizeof(mb));
	fit_note(s, "%s=%ld: peak reserved %s%s", s->name, value, mb,
		 capped.oom ? ", out of memory" : "");
	return 0;
}

/* Records (or finds) and replays values[0..n) not tried yet. */
static int
fit_eval(fit_state_t *st, const long *values, size_t n)
{
	const msim_fit_spec_t *s = st->s;
	size_t k = n ? n : 1;
	char (*traces)[4096] = calloc(k, sizeof(*traces));
	long *todo = calloc(k, sizeof(*todo));
	bool *bad = calloc(k, sizeof(*bad));
	size_t m = 0;
	int rc = traces && todo && bad ? 0 : MSIM_ENOMEM;
	for (size_t i = 0; !rc && i < n; i++) {
		if (fit_find(st->res, values[i]))
			continue;
		todo[m] = values[i];
		if ((rc = fit_trace(s, values[i], traces[m], sizeof(*traces))))
			break;
		if (s->pattern && access(traces[m], R_OK) != 0) {
			snprintf(st->why, st->whylen, "%s: %s", traces[m],
				 strerror(errno));
			rc = MSIM_EIO;
		}
		m++;
	}
	if (rc == MSIM_ENOMEM)
		snprintf(st->why, st->whylen, "out of memory");
	/* values where the symbolic trace holds: instantiated, not
	 * recorded; the others moved to the front and recorded */
	bool *inst = calloc(k, sizeof(*inst));
	size_t r = 0;
	if (!inst && !rc) {
		snprintf(st->why, st->whylen, "out of memory");
		rc = MSIM_ENOMEM;
	}
	for (size_t i = 0; !rc && !s->pattern && i < m; i++) {
		if (msim_symrec_holds(&st->sym, todo[i])) {
			char iwhy[1024];
			if (msim_symtrace_instantiate(st->sym.trace, todo[i],
						      traces[i], iwhy,
						      sizeof(iwhy)) == 0) {
				inst[i] = true;
				continue;
			}
			fit_note(s, "%s; recorded instead", iwhy);
		} else if (st->sym.lo <= st->sym.hi) {
			fit_note(s, "%s=%ld is outside %ld..%ld, where the "
				 "symbolic trace holds: recorded", s->name,
				 todo[i], st->sym.lo, st->sym.hi);
		}
		if (r != i) {
			long tv = todo[r];
			char tt[4096];
			memcpy(tt, traces[r], sizeof(tt));
			todo[r] = todo[i];
			memcpy(traces[r], traces[i], sizeof(tt));
			todo[i] = tv;
			memcpy(traces[i], tt, sizeof(tt));
			inst[i] = inst[r];
			inst[r] = false;
		}
		r++;
	}
	if (!rc && !s->pattern)
		rc = fit_record(st, todo, traces, r, bad);
	for (size_t i = 0; !rc && i < m; i++)
		if (!bad[i]) {
			rc = fit_point(st, todo[i], traces[i]);
			msim_fit_curve_pt_t *c = fit_find(st->res, todo[i]);
			if (!rc && c && inst[i]) {
				c->instantiated = true;
				st->res->instantiated++;
			}
		}
	free(inst);
	free(traces);
	free(todo);
	free(bad);
	return rc;
}

static int fit_symbolic(fit_state_t *st, long g);

/* b - a without overflow over any long range. */
static unsigned long
fit_span(long a, long b)
{
	return (unsigned long)b - (unsigned long)a;
}

/* a + f * span for f in [0, 1], span = b - a: the value that far into
 * [a, b], without overflow (unsigned arithmetic, the double clamped). */
static long
fit_at(long a, unsigned long span, double f)
{
	double d = f * (double)span;
	unsigned long off = d >= (double)span ? span : (unsigned long)d;
	return (long)((unsigned long)a + off);
}

/* The guess of the largest value that fits in (a, b): where the line
 * through what a and b need (uncapped peak reserved) meets the cap, or
 * the middle when bisect (or b failed: it needs nothing known); then up
 * to k values around it. */
static size_t
fit_pick(const msim_fit_spec_t *s, const msim_fit_curve_pt_t *a,
	 const msim_fit_curve_pt_t *b, bool bisect, long *v, size_t k)
{
	long lo = a->value + 1, hi = b->value - 1;
	unsigned long span = fit_span(a->value, b->value);
	long g = a->value + (long)(span / 2);
	if (!bisect && !b->capped.failed && b->reserved > a->reserved) {
		double f = ((double)s->cap - (double)a->reserved) /
			   (double)(b->reserved - a->reserved);
		f = f < 0 ? 0 : f > 1 ? 1 : f;
		g = fit_at(a->value, span, f);
	}
	g = g < lo ? lo : g > hi ? hi : g;
	size_t n = 0;
	if (bisect && k > 1) { /* k evenly spaced */
		for (size_t i = 1; i <= k; i++) {
			long x = fit_at(a->value, span,
					(double)i / (double)(k + 1));
			if (x >= lo && x <= hi && (!n || x > v[n - 1]))
				v[n++] = x;
		}
		if (!n)
			v[n++] = g;
		return n;
	}
	/* g, g+1, g-1, g+2, ...: the answer is near a good guess */
	for (unsigned long d = 0; n < k && d <= fit_span(lo, hi); d++) {
		if (d <= fit_span(g, hi))
			v[n++] = g + (long)d;
		if (d && n < k && d <= fit_span(lo, g))
			v[n++] = g - (long)d;
	}
	return n;
}

/* The search: lo, hi, then guesses in (a, b) while a fits and b does
 * not (a value whose recording failed does not fit).  A good guess fits
 * and its next value does not, so one guess that does not halve the
 * range is allowed; after two, a bisection: the search never takes more
 * than three times bisection's recordings. */
static int
fit_search(fit_state_t *st)
{
	const msim_fit_spec_t *s = st->s;
	msim_fit_result_t *res = st->res;
	size_t k = s->jobs > 1 ? (size_t)s->jobs : 1;
	long ends[2] = {s->lo, s->hi};
	int rc = fit_eval(st, ends, k > 1 && s->lo < s->hi ? 2 : 1);
	if (rc || !fit_fits(fit_find(res, s->lo)))
		return rc;
	if ((rc = fit_eval(st, &ends[1], 1)))
		return rc;
	long a = s->lo, b = s->hi; /* a fits, b does not */
	if (fit_fits(fit_find(res, b)))
		a = b;
	bool bisect = false, sym = s->symbolic && !s->pattern;
	int slow = 0; /* guesses in a row that did not halve the range */
	while (fit_span(a, b) > 1) {
		long v[256];
		size_t n = fit_pick(s, fit_find(res, a), fit_find(res, b),
				    bisect, v, k < 64 ? k : 64);
		if (sym && n) {
			/* --symbolic: recorded around the first guess; where
			 * it holds, every value between a and b instantiated
			 * (a replay each: the curve there, dense) */
			sym = false;
			if ((rc = fit_symbolic(st, v[0])))
				return rc;
			n = 0;
			for (long x = a + 1; x < b && n < 256; x++)
				if (msim_symrec_holds(&st->sym, x))
					v[n++] = x;
			if (!n)
				n = fit_pick(s, fit_find(res, a),
					     fit_find(res, b), bisect, v,
					     k < 64 ? k : 64);
		}
		if ((rc = fit_eval(st, v, n)))
			return rc;
		long oa = a, ob = b;
		for (size_t i = 0; i < res->ncurve; i++) {
			const msim_fit_curve_pt_t *c = &res->curve[i];
			if (c->value > a && c->value < b && fit_fits(c))
				a = c->value;
		}
		for (size_t i = res->ncurve; i-- > 0;) {
			const msim_fit_curve_pt_t *c = &res->curve[i];
			if (c->value > a && c->value < b && !fit_fits(c))
				b = c->value;
		}
		slow = bisect || fit_span(a, b) <= fit_span(oa, ob) / 2
			? 0 : slow + 1;
		bisect = slow == 2;
	}
	res->fits = true;
	res->best = a;
	res->at_best = fit_find(res, a)->capped;
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
		int rc = fit_replay(s, res->trace, s->confs[i], false, c, why,
				    whylen);
		if (rc)
			return rc;
		if (!c->oom && c->reserved < res->conf_best.reserved) {
			res->best_conf = i;
			res->conf_best = *c;
		}
	}
	return 0;
}

/* The file of the symbolic recording at v (msim_symrec_spec_t.path). */
static void
fit_sym_path(void *ctx, long v, char *const *ropt, int nropt,
	     char *const *cmd, char *buf, size_t n)
{
	const msim_fit_spec_t *s = ctx;
	(void)ropt;
	(void)nropt;
	(void)cmd;
	snprintf(buf, n, "%s/%s-symbolic-%ld.csv", s->dir, s->name, v);
}

static void
fit_sym_note(void *ctx, const char *line)
{
	fit_note(ctx, "%s", line);
}

/* The symbolic trace (spec->symbolic) around g (lab/symrec.h): where it
 * holds, st->sym is set; else res->symbolic says why and every value is
 * recorded.  0, or a negative MSIM_E* when the search cannot go on. */
static int
fit_symbolic(fit_state_t *st, long g)
{
	const msim_fit_spec_t *s = st->s;
	msim_symrec_spec_t ss = {
		.rec = &s->rec, .srv = st->srv, .cmd = s->cmd,
		.ncmd = s->ncmd, .ropt = s->ropt, .nropt = s->nropt,
		.name = s->name, .lo = s->lo, .hi = s->hi, .at = g,
		.path = fit_sym_path, .note = fit_sym_note, .ctx = (void *)s,
	};
	int rc = msim_symrec_make(&ss, &st->sym, st->why, st->whylen);
	st->res->symbolic_recordings = st->sym.recordings;
	snprintf(st->res->symbolic, sizeof(st->res->symbolic), "%s",
		 st->sym.why);
	return rc;
}

/* Whether the peaks seen grow with the value, as the search assumes: a
 * larger value with a lower peak allocated (reserved steps with the
 * allocator's rounding), or the same peaks at every value (the value may
 * not reach the memory at all) is told in res->growth.  Values that ran
 * out of memory under the cap or failed are left out. */
static void
fit_growth(const msim_fit_spec_t *s, msim_fit_result_t *res)
{
	const msim_fit_curve_pt_t *prev = NULL;
	size_t n = 0;
	bool same = true;
	char *g = res->growth;
	size_t gl = sizeof(res->growth);
	for (size_t i = 0; i < res->ncurve; i++) {
		const msim_fit_curve_pt_t *c = &res->curve[i];
		const msim_fit_point_t *p = &c->capped;
		if (!fit_fits(c))
			continue;
		if (prev && !g[0] && p->allocated < prev->capped.allocated)
			snprintf(g, gl, "the peaks do not grow with %s (%s=%ld: "
				 "%" PRId64 " bytes allocated, %s=%ld: %"
				 PRId64 "); the search assumes they do, so the "
				 "answer may be wrong", s->name, s->name,
				 prev->value, prev->capped.allocated, s->name,
				 c->value, p->allocated);
		same &= !prev || (p->reserved == prev->capped.reserved &&
				  p->allocated == prev->capped.allocated);
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
	fit_state_t st = {.s = spec, .res = res, .why = why,
			  .whylen = whylen};
	int rc = 0;
	if (!spec->pattern) { /* on failure, each value alone says why */
		rc = msim_recserver_new(&spec->rec, spec->cmd, spec->ncmd,
					&st.srv, why, whylen);
		rc = rc == MSIM_EIO ? rc : 0; /* EIO: memsim got a signal */
		why[0] = rc ? why[0] : '\0';
	}
	st.sym.lo = 1;
	st.sym.hi = 0;
	if (!rc)
		rc = fit_search(&st);
	msim_recserver_destroy(st.srv);
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
	free(res->curve);
	res->curve = NULL;
	res->ncurve = 0;
}

int
msim_fit_plot(const msim_fit_spec_t *s, const msim_fit_result_t *res,
	      const char *plots_dir, const char *gnuplot, const char *out,
	      char *why, size_t whylen)
{
	char data[] = "/tmp/memsim-fit-XXXXXX";
	int fd = mkstemp(data);
	FILE *fp = fd < 0 ? NULL : fdopen(fd, "w");
	if (!fp) {
		snprintf(why, whylen, "the plot's data: %s", strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(data);
		}
		return MSIM_EIO;
	}
	fprintf(fp, "%s,reserved,allocated,capped_reserved,oom,cap,best\n",
		s->name);
	for (size_t i = 0; i < res->ncurve; i++) {
		const msim_fit_curve_pt_t *c = &res->curve[i];
		if (c->capped.failed)
			continue; /* no peaks: its recording failed */
		fprintf(fp, "%ld,%" PRId64 ",%" PRId64 ",%" PRId64 ",%d,%" PRIu64
			",%ld\n", c->value, c->reserved, c->allocated,
			c->capped.reserved, c->capped.oom, s->cap,
			res->best);
	}
	int rc = 0;
	if (fclose(fp)) {
		snprintf(why, whylen, "the plot's data: %s", strerror(errno));
		rc = MSIM_EIO;
	}
	char title[256], capb[32];
	msim_format_bytes(s->cap, capb, sizeof(capb));
	if (res->fits)
		snprintf(title, sizeof(title), "memsim fit: the largest %s "
			 "under %s is %ld", s->name, capb, res->best);
	else
		snprintf(title, sizeof(title), "memsim fit: no %s fits under "
			 "%s", s->name, capb);
	if (!rc)
		rc = msim_plot_run(plots_dir, gnuplot, "fit", data, out, title,
				   why, whylen);
	unlink(data);
	return rc;
}

/* The bytes the allocator may hold: the cap, or less when the device
 * less its context leaves less. */
static uint64_t
fit_usable(const msim_fit_spec_t *f)
{
	uint64_t left = f->capacity - f->context;
	return f->cap < left ? f->cap : left;
}

/* The curve learned: each value tried, what it needs, how it ran. */
static void
fit_print_curve(const msim_fit_spec_t *f, const msim_fit_result_t *r)
{
	printf("curve      %-8s %14s %14s  under the cap\n", f->name,
	       "needs reserved", "allocated");
	for (size_t i = 0; i < r->ncurve; i++) {
		const msim_fit_curve_pt_t *c = &r->curve[i];
		char rb[32], ab[32];
		msim_format_bytes((uint64_t)c->reserved, rb, sizeof(rb));
		msim_format_bytes((uint64_t)c->allocated, ab, sizeof(ab));
		if (c->capped.failed) {
			printf("           %-8ld %14s %14s  %s\n", c->value, "-",
			       "-", "recording failed");
			continue;
		}
		printf("           %-8ld %14s %14s  %s%s\n", c->value, rb, ab,
		       c->capped.oom ? "out of memory"
		       : r->fits && c->value == r->best ? "fits: the answer"
							: "fits",
		       c->instantiated ? " (symbolic)" : "");
	}
}

void
msim_fit_print(const msim_fit_spec_t *f, const msim_fit_result_t *r,
	  const char *device)
{
	char capb[32], rb[32], ab[32], mb[32];
	uint64_t usable = fit_usable(f);
	msim_format_bytes(f->cap, capb, sizeof(capb));
	printf("cap        %s (%" PRIu64 " bytes)\n", capb, f->cap);
	msim_format_bytes(f->capacity, rb, sizeof(rb));
	msim_format_bytes(f->context, ab, sizeof(ab));
	msim_format_bytes(usable, mb, sizeof(mb));
	printf("device     %s: %s, context %s; the allocator may hold %s%s\n",
	       device, rb, ab, mb, usable < f->cap
	       ? " (less than the cap: the context takes the rest)" : "");
	if (r->symbolic[0])
		printf("recordings %d (%d with --symbolic; %d value%s "
		       "instantiated)\n", r->tries - r->instantiated +
		       r->symbolic_recordings, r->symbolic_recordings,
		       r->instantiated, r->instantiated == 1 ? "" : "s");
	else
		printf("recordings %d\n", r->tries);
	if (r->failed)
		printf("failed     %d recording%s (each counted as not "
		       "fitting; see above)\n", r->failed,
		       r->failed == 1 ? "" : "s");
	if (r->growth[0])
		printf("warning    %s\n", r->growth);
	if (r->symbolic[0])
		printf("symbolic   %s\n", r->symbolic);
	fit_print_curve(f, r);
	bool lo_failed = r->ncurve && r->curve[0].value == f->lo &&
			 r->curve[0].capped.failed;
	if (!r->fits) {
		printf("fits       none: %s=%ld %s\n", f->name, f->lo,
		       lo_failed ? "could not be recorded"
				 : "already runs out of memory");
		return;
	}
	msim_format_bytes((uint64_t)r->at_best.reserved, rb, sizeof(rb));
	msim_format_bytes((uint64_t)r->at_best.allocated, ab, sizeof(ab));
	msim_format_bytes(usable - (uint64_t)r->at_best.reserved, mb,
			  sizeof(mb));
	printf("largest    %s=%ld%s\n", f->name, r->best,
	       r->best == f->hi ? " (the top of the range)" : "");
	printf("peak       reserved %s, allocated %s (default settings)\n",
	       rb, ab);
	printf("margin     %s after the context (%.1f%% of %s)\n", mb,
	       100.0 * (double)(usable - (uint64_t)r->at_best.reserved) /
		       (double)usable, usable < f->cap ? "what it leaves"
		       : "the cap");
	for (size_t i = 0; i < f->nconf; i++) {
		msim_format_bytes((uint64_t)r->cand[i].reserved, rb,
				  sizeof(rb));
		printf("candidate  %-40s reserved %s%s\n", f->confs[i], rb,
		       r->cand[i].oom ? " (out of memory)" : "");
	}
	if (f->nconf) {
		msim_format_bytes((uint64_t)r->conf_best.reserved, rb,
				  sizeof(rb));
		msim_format_bytes(usable - (uint64_t)r->conf_best.reserved, mb,
				  sizeof(mb));
		printf("best       PYTORCH_CUDA_ALLOC_CONF=\"%s\": reserved %s, "
		       "margin %s\n", r->best_conf < f->nconf
		       ? f->confs[r->best_conf] : "(default)", rb, mb);
		return;
	}
	printf("tune       (memsim tune --cap %" PRIu64 " --device %s on "
	       "%s=%ld)\n", usable, device, f->name, r->best);
	if (r->tuned)
		msim_tune_print(&r->tune, r->trace, usable);
}

/* One replay of fit's JSON. */
static void
fit_json_point(const char *name, const msim_fit_point_t *p, uint64_t usable)
{
	printf(",\n  \"%s\": {\"peak_reserved_bytes\": %" PRId64
	       ", \"peak_allocated_bytes\": %" PRId64 ", \"margin_bytes\": %"
	       PRId64 ", \"oom\": %s}", name, p->reserved, p->allocated,
	       (int64_t)usable - p->reserved, p->oom ? "true" : "false");
}

void
msim_fit_json(const msim_fit_spec_t *f, const msim_fit_result_t *r,
	 const char *device)
{
	uint64_t usable = fit_usable(f);
	printf("{\n  \"cap_bytes\": %" PRIu64 ",\n  \"device\": ", f->cap);
	msim_print_json_str(stdout, device);
	printf(",\n  \"capacity_bytes\": %" PRIu64 ",\n  \"context_bytes\": "
	       "%" PRIu64 ",\n  \"usable_bytes\": %" PRIu64 ",\n  "
	       "\"name\": ", f->capacity, f->context, usable);
	msim_print_json_str(stdout, f->name);
	printf(",\n  \"lo\": %ld,\n  \"hi\": %ld,\n  \"recordings\": %d,"
	       "\n  \"failed\": %d,\n  \"warning\": ", f->lo, f->hi,
	       r->tries - r->instantiated + r->symbolic_recordings, r->failed);
	msim_print_json_str(stdout, r->growth);
	printf(",\n  \"symbolic\": ");
	msim_print_json_str(stdout, r->symbolic);
	printf(",\n  \"instantiated\": %d", r->instantiated);
	printf(",\n  \"curve\": [");
	for (size_t i = 0; i < r->ncurve; i++) {
		const msim_fit_curve_pt_t *c = &r->curve[i];
		printf("%s\n    {\"value\": %ld, \"failed\": %s, "
		       "\"peak_reserved_bytes\": %" PRId64 ", "
		       "\"peak_allocated_bytes\": %" PRId64 ", "
		       "\"capped_reserved_bytes\": %" PRId64 ", \"oom\": %s, "
		       "\"instantiated\": %s}",
		       i ? "," : "", c->value,
		       c->capped.failed ? "true" : "false", c->reserved,
		       c->allocated, c->capped.reserved,
		       c->capped.oom ? "true" : "false",
		       c->instantiated ? "true" : "false");
	}
	printf("%s],\n  \"fits\": %s", r->ncurve ? "\n  " : "",
	       r->fits ? "true" : "false");
	if (!r->fits) {
		printf(",\n  \"largest\": null\n}\n");
		return;
	}
	printf(",\n  \"largest\": %ld,\n  \"trace\": ", r->best);
	msim_print_json_str(stdout, r->trace);
	fit_json_point("at_largest", &r->at_best, usable);
	printf(",\n  \"candidates\": [");
	for (size_t i = 0; i < f->nconf; i++) {
		printf("%s\n    {\"alloc_conf\": ", i ? "," : "");
		msim_print_json_str(stdout, f->confs[i]);
		printf(", \"peak_reserved_bytes\": %" PRId64 ", \"oom\": %s}",
		       r->cand[i].reserved, r->cand[i].oom ? "true" : "false");
	}
	printf("%s]", f->nconf ? "\n  " : "");
	if (f->nconf) {
		printf(",\n  \"best_alloc_conf\": ");
		msim_print_json_str(stdout, r->best_conf < f->nconf
				  ? f->confs[r->best_conf] : "");
		fit_json_point("best", &r->conf_best, usable);
	} else if (r->tuned) {
		printf(",\n  \"tune\": ");
		msim_tune_json(&r->tune, r->trace, usable, false);
		printf("\n  }");
	} else {
		printf(",\n  \"tune\": null,\n  \"tune_error\": ");
		msim_print_json_str(stdout, r->tune_err);
	}
	printf("\n}\n");
}
