/*
 * The public API of memsim.h over the job of lab/job.h: a run collects a
 * setting (trace, policy, options), opens and replays it as one job, and
 * keeps its figures as a flat list of named values in the order of
 * `memsim run --json`, so C and Python users read the same keys.  Only
 * the memsim_* functions are exported from the shared library
 * (Makefile.am: -export-symbols-regex); everything else stays inside.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "lib/memsim.h"
#include "lab/job.h"
#include "policies/registry.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "sim/results.h"
#include "sim/timemodel.h"
#include "sim/units.h"
#include "traces/trace.h"

/* The codes shared with sim/error.h keep their values. */
static_assert((int)MEMSIM_EINVAL == (int)MSIM_EINVAL, "EINVAL");
static_assert((int)MEMSIM_ENOMEM == (int)MSIM_ENOMEM, "ENOMEM");
static_assert((int)MEMSIM_EDB == (int)MSIM_EDB, "EDB");
static_assert((int)MEMSIM_EIO == (int)MSIM_EIO, "EIO");
static_assert((int)MEMSIM_EFORMAT == (int)MSIM_EFORMAT, "EFORMAT");
static_assert((int)MEMSIM_ENOTFOUND == (int)MSIM_ENOTFOUND, "ENOTFOUND");
static_assert((int)MEMSIM_ENOTSUP == (int)MSIM_ENOTSUP, "ENOTSUP");

typedef struct fig_s {
	char *name;     /* owned */
	int kind;       /* MEMSIM_INT, _REAL, _TEXT */
	int64_t i;
	double d;
	const char *t;  /* owned by the job */
} fig_t;

/* Strings of the setting the run owns (the job borrows them). */
enum { S_TRACE, S_POLICY, S_CONF, S_ADDRESSES, S_TRANSFORM, S_CALIBRATION,
       S_N };

struct memsim_run_s {
	char *s[S_N];
	msim_job_spec_t spec;
	msim_timemodel_t *tm;
	msim_job_t *job;      /* after memsim_replay() */
	bool replayed;
	fig_t *figs;
	size_t nfigs, capfigs;
	char errmsg[1200];
};

static int
run_fail(memsim_run_t *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
run_fail(memsim_run_t *r, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
	return rc;
}

/* Replaces the owned string slot k by a copy of v (NULL: none). */
static int
run_str(memsim_run_t *r, int k, const char *v)
{
	char *c = NULL;
	if (v && !(c = strdup(v)))
		return run_fail(r, MEMSIM_ENOMEM, "out of memory");
	free(r->s[k]);
	r->s[k] = c;
	return 0;
}

const char *
memsim_version(void)
{
	return PACKAGE_VERSION;
}

const char *
memsim_strerror(int code)
{
	switch (code) {
	case MEMSIM_OK: return "success";
	case MEMSIM_EPOLICY: return "unknown policy";
	case MEMSIM_EPARAMS: return "invalid policy parameters";
	case MEMSIM_EINPUT: return "invalid trace or model spec";
	case MEMSIM_ECAP: return "invalid cap";
	case MEMSIM_ESTATE: return "called out of order";
	default: return msim_strerror(code);
	}
}

static const msim_policy_ops_t *
policy_at(size_t i)
{
	const msim_policy_ops_t *const *list = msim_policy_list();
	for (size_t k = 0; list[k]; k++)
		if (k == i)
			return list[k];
	return NULL;
}

const char *
memsim_policy_name(size_t i)
{
	const msim_policy_ops_t *ops = policy_at(i);
	return ops ? ops->name : NULL;
}

const char *
memsim_policy_summary(size_t i)
{
	const msim_policy_ops_t *ops = policy_at(i);
	return ops ? ops->summary : NULL;
}

int
memsim_open(memsim_run_t **out, const char *trace)
{
	memsim_run_t *r = calloc(1, sizeof(*r));
	*out = r;
	if (!r)
		return MEMSIM_ENOMEM;
	if (!trace || !*trace)
		return run_fail(r, MEMSIM_EINVAL, "no trace given");
	int rc;
	if ((rc = run_str(r, S_TRACE, trace)) ||
	    (rc = run_str(r, S_POLICY, "pytorch")))
		return rc;
	r->spec.trace = r->s[S_TRACE];
	r->spec.policy = r->s[S_POLICY];
	return 0;
}

static void
figs_clear(memsim_run_t *r)
{
	for (size_t i = 0; i < r->nfigs; i++)
		free(r->figs[i].name);
	free(r->figs);
	r->figs = NULL;
	r->nfigs = r->capfigs = 0;
}

void
memsim_close(memsim_run_t *r)
{
	if (!r)
		return;
	msim_job_destroy(r->job);
	msim_timemodel_destroy(r->tm);
	figs_clear(r);
	for (int k = 0; k < S_N; k++)
		free(r->s[k]);
	free(r);
}

const char *
memsim_errmsg(const memsim_run_t *r)
{
	return r ? r->errmsg : "out of memory";
}

int
memsim_set_policy(memsim_run_t *r, const char *policy, const char *conf)
{
	*r->errmsg = '\0';
	if (r->replayed)
		return run_fail(r, MEMSIM_ESTATE, "the run was replayed "
				"already");
	const msim_policy_ops_t *ops = policy ? msim_policy_find(policy) : NULL;
	if (!ops)
		return run_fail(r, MEMSIM_EPOLICY, "unknown policy '%s'",
				policy ? policy : "");
	/* The parameters are checked now, as the job will parse them. */
	msim_params_t pv;
	if (msim_params_init(&pv, ops->params))
		return run_fail(r, MEMSIM_ENOMEM, "out of memory");
	int rc = 0;
	if (conf && *conf && msim_params_parse(&pv, conf))
		rc = run_fail(r, MEMSIM_EPARAMS, "alloc_conf: %s", pv.errmsg);
	msim_params_clear(&pv);
	if (rc || (rc = run_str(r, S_POLICY, policy)) ||
	    (rc = run_str(r, S_CONF, conf)))
		return rc;
	r->spec.policy = r->s[S_POLICY];
	r->spec.conf = r->s[S_CONF];
	return 0;
}

static int
opt_bool(memsim_run_t *r, const char *name, const char *v, bool *out)
{
	if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"))
		*out = true;
	else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no"))
		*out = false;
	else
		return run_fail(r, MEMSIM_EINVAL, "%s: '%s' is not 1 or 0",
				name, v);
	return 0;
}

static int
opt_bytes(memsim_run_t *r, const char *name, const char *v, uint64_t *out)
{
	if (msim_parse_bytes(v, out))
		return run_fail(r, MEMSIM_EINVAL, "%s: '%s' is not a size in "
				"bytes", name, v);
	return 0;
}

int
memsim_set_option(memsim_run_t *r, const char *name, const char *value)
{
	*r->errmsg = '\0';
	if (!name || !value)
		return run_fail(r, MEMSIM_EINVAL, "an option needs a name and "
				"a value");
	if (r->replayed)
		return run_fail(r, MEMSIM_ESTATE, "%s: the run was replayed "
				"already", name);
	msim_job_spec_t *s = &r->spec;
	char *end;
	if (!strcmp(name, "cap"))
		return opt_bytes(r, name, value, &s->cap);
	if (!strcmp(name, "capacity")) {
		int rc = opt_bytes(r, name, value, &s->capacity);
		if (!rc && !s->capacity)
			rc = run_fail(r, MEMSIM_EINVAL, "capacity: 0 bytes");
		return rc;
	}
	if (!strcmp(name, "fraction")) {
		errno = 0;
		double f = strtod(value, &end);
		if (end == value || *end || errno || !(f > 0 && f <= 1))
			return run_fail(r, MEMSIM_EINVAL, "fraction: '%s' is "
					"not in (0, 1]", value);
		s->fraction = f;
		return 0;
	}
	if (!strcmp(name, "addresses")) {
		if (strcmp(value, "model") && strcmp(value, "trace"))
			return run_fail(r, MEMSIM_EINVAL, "addresses: '%s' is "
					"not model or trace", value);
		int rc = run_str(r, S_ADDRESSES, value);
		s->addresses = r->s[S_ADDRESSES];
		return rc;
	}
	if (!strcmp(name, "transform")) {
		int rc = run_str(r, S_TRANSFORM, *value ? value : NULL);
		s->transform = r->s[S_TRANSFORM];
		return rc;
	}
	if (!strcmp(name, "strict"))
		return opt_bool(r, name, value, &s->strict);
	if (!strcmp(name, "lenient"))
		return opt_bool(r, name, value, &s->lenient);
	if (!strcmp(name, "keep_going"))
		return opt_bool(r, name, value, &s->keep_going);
	if (!strcmp(name, "requests_only"))
		return opt_bool(r, name, value, &s->requests_only);
	if (!strcmp(name, "recording")) {
		int rc = opt_bool(r, name, value, &s->recording);
		if (!rc && s->recording)
			rc = memsim_set_option(r, "addresses", "trace");
		return rc;
	}
	if (!strcmp(name, "device")) {
		errno = 0;
		unsigned long d = strtoul(value, &end, 10);
		if (end == value || *end || errno || *value == '-' ||
		    d >= 1024)
			return run_fail(r, MEMSIM_EINVAL, "device: '%s' is not "
					"a device index", value);
		s->device1 = (unsigned)d + 1;
		return 0;
	}
	if (!strcmp(name, "calibration")) {
		msim_timemodel_t *tm = NULL;
		char why[1024];
		gsl_error_handler_t *h = gsl_set_error_handler_off();
		int rc = msim_timemodel_load(value, &tm, why, sizeof(why));
		gsl_set_error_handler(h);
		if (rc)
			return run_fail(r, rc, "calibration: %s", why);
		if ((rc = run_str(r, S_CALIBRATION, value))) {
			msim_timemodel_destroy(tm);
			return rc;
		}
		msim_timemodel_destroy(r->tm);
		r->tm = tm;
		s->timemodel = tm;
		s->calibration = r->s[S_CALIBRATION];
		return 0;
	}
	return run_fail(r, MEMSIM_ENOTFOUND, "no option '%s'", name);
}

/* Appends a figure; its name is copied. */
static fig_t *
fig_add(memsim_run_t *r, const char *name, int kind)
{
	if (r->nfigs == r->capfigs) {
		size_t cap = r->capfigs ? 2 * r->capfigs : 192;
		fig_t *v = realloc(r->figs, cap * sizeof(*v));
		if (!v)
			return NULL;
		r->figs = v;
		r->capfigs = cap;
	}
	fig_t *f = &r->figs[r->nfigs];
	memset(f, 0, sizeof(*f));
	if (!(f->name = strdup(name)))
		return NULL;
	f->kind = kind;
	r->nfigs++;
	return f;
}

static bool
fig_int(memsim_run_t *r, const char *name, int64_t v)
{
	fig_t *f = fig_add(r, name, MEMSIM_INT);
	if (f)
		f->i = v;
	return f != NULL;
}

static bool
fig_real(memsim_run_t *r, const char *name, double v)
{
	fig_t *f = fig_add(r, name, MEMSIM_REAL);
	if (f)
		f->d = v;
	return f != NULL;
}

static bool
fig_bool(memsim_run_t *r, const char *name, bool v)
{
	fig_t *f = fig_add(r, name, MEMSIM_BOOL);
	if (f)
		f->i = v;
	return f != NULL;
}

static bool
fig_text(memsim_run_t *r, const char *name, const char *v)
{
	fig_t *f = fig_add(r, name, MEMSIM_TEXT);
	if (f)
		f->t = v ? v : "";
	return f != NULL;
}

typedef struct stat_ctx_s {
	memsim_run_t *r;
	bool ok;
} stat_ctx_t;

static void
fig_stat(const char *name, int64_t value, void *ctx)
{
	stat_ctx_t *c = ctx;
	if (c->ok)
		c->ok = fig_int(c->r, name, value);
}

/* Whether t is a snapshot without any trace event. */
static bool
seed_no_events(msim_trace_t *t)
{
	msim_trace_tally_t tl;
	msim_trace_tally(t, &tl);
	return tl.entries == 0 && msim_trace_ended(t) &&
	       !strcmp(msim_trace_format_name(t), "pickle");
}

/* What the start of a partial history was seeded with: the keys `memsim
 * run --json` adds for it (msim_cli_seed_json() of cli/snapnotes.c, under
 * the same condition; tests/test_memsim.py holds the two together). */
static bool
figs_seed(memsim_run_t *r, msim_trace_t *t)
{
	msim_trace_seed_t s;
	msim_trace_seeding(t, &s);
	const char *first;
	uint64_t skipped = msim_trace_skipped(t, &first);
	msim_trace_tally_t tl;
	msim_trace_tally(t, &tl);
	bool none = seed_no_events(t);
	if (!s.requests && !s.snap_live && !skipped && !tl.zero_skipped &&
	    !none)
		return true;
	bool ok = fig_int(r, "seeded_from_frees", (int64_t)s.from_frees) &&
	     fig_int(r, "seeded_from_snapshot", (int64_t)s.from_snapshot) &&
	     fig_int(r, "seeded_late", (int64_t)s.late) &&
	     fig_int(r, "seeded_bytes", (int64_t)s.bytes) &&
	     fig_int(r, "seeded_segments", (int64_t)s.segments) &&
	     fig_int(r, "seeded_segment_bytes", (int64_t)s.segment_bytes) &&
	     fig_int(r, "seed_fillers", (int64_t)s.fillers) &&
	     fig_int(r, "seed_requests", (int64_t)s.requests) &&
	     fig_bool(r, "seed_exact", s.exact);
	if (ok && !s.exact)
		ok = fig_text(r, "seed_inexact", s.inexact);
	return ok &&
	       fig_int(r, "snapshot_live_blocks", (int64_t)s.snap_live) &&
	       fig_int(r, "snapshot_live_bytes", (int64_t)s.snap_live_bytes) &&
	       fig_int(r, "explained_live_blocks", (int64_t)s.explained) &&
	       fig_int(r, "explained_live_bytes",
		       (int64_t)s.explained_bytes) &&
	       fig_int(r, "skipped_entries", (int64_t)skipped) &&
	       fig_int(r, "zero_byte_skipped", (int64_t)tl.zero_skipped) &&
	       fig_bool(r, "no_trace_events", none);
}

/* The figures of a finished job, in the order of `memsim run --json`
 * (cli/cmd_run.c print_json). */
static bool
figs_fill(memsim_run_t *r, const msim_job_result_t *res)
{
	bool ok = fig_text(r, "trace", res->trace_path);
	if (ok && res->strategy)
		ok = fig_text(r, "strategy", res->strategy);
	for (size_t i = 0; ok && i < res->nmeta; i++)
		ok = fig_int(r, res->meta[i][0],
			     (int64_t)strtoull(res->meta[i][1], NULL, 10));
	ok = ok && fig_text(r, "trace_hash", res->trace_hash) &&
	     fig_text(r, "policy", res->policy) &&
	     fig_text(r, "params", res->params) &&
	     fig_int(r, "cap_bytes", (int64_t)res->cap_bytes) &&
	     fig_int(r, "requests", (int64_t)res->sum.requests);
	stat_ctx_t c = {r, ok};
	if (ok)
		msim_stats_foreach(&res->st, fig_stat, &c);
	ok = c.ok && fig_int(r, "oom_request", res->sum.oom_request) &&
	     fig_real(r, "frag_at_peak", res->sum.frag_at_peak) &&
	     fig_real(r, "frag_mean", res->sum.frag_mean) &&
	     fig_real(r, "ext_frag_max", res->sum.ext_frag_max) &&
	     fig_int(r, "addr_same", (int64_t)res->sum.addr_same) &&
	     fig_int(r, "addr_other", (int64_t)res->sum.addr_other) &&
	     fig_real(r, "modelled_device_ms", strtod(res->devtime_ms, NULL)) &&
	     fig_real(r, "wall_ms", res->wall_ms);
	if (ok && *res->snapshot_state)
		ok = fig_text(r, "snapshot_state", res->snapshot_state);
	if (ok && res->settings_note && *res->settings_note)
		ok = fig_text(r, "settings_note", res->settings_note);
	msim_trace_t *t = msim_job_trace(r->job);
	if (ok && t)
		ok = figs_seed(r, t);
	return ok;
}

static int
job_code(const msim_job_err_t *err, int rc)
{
	switch (err->part) {
	case MSIM_JOB_EPOLICY: return MEMSIM_EPOLICY;
	case MSIM_JOB_EPARAMS: return MEMSIM_EPARAMS;
	case MSIM_JOB_ECAP: return MEMSIM_ECAP;
	case MSIM_JOB_EINPUT:
		/* The reader's own code says more (missing, malformed). */
		return rc == MSIM_EIO || rc == MSIM_EFORMAT ||
		       rc == MSIM_ENOTFOUND || rc == MSIM_ENOMEM
		       ? rc : MEMSIM_EINPUT;
	case MSIM_JOB_ESTORE: return MEMSIM_EDB;
	default: return rc < 0 ? rc : MEMSIM_EINVAL;
	}
}

int
memsim_replay(memsim_run_t *r)
{
	*r->errmsg = '\0';
	if (r->replayed)
		return run_fail(r, MEMSIM_ESTATE, "the run was replayed "
				"already");
	r->replayed = true;
	msim_job_err_t err;
	/* GSL's default handler aborts: the code below checks GSL's status
	 * codes instead (as memsim's main() does), so it is off during the
	 * replay and the caller's handler is back after it. */
	gsl_error_handler_t *gsl_handler = gsl_set_error_handler_off();
	/* Opened as a stored job, so memsim_store() keeps the blocks at
	 * peak as `memsim run --db` does. */
	int rc = msim_job_open(&r->spec, true, &r->job, &err);
	if (!rc)
		rc = msim_job_run(r->job, &err);
	gsl_set_error_handler(gsl_handler);
	if (rc) {
		msim_job_destroy(r->job);
		r->job = NULL;
		return run_fail(r, job_code(&err, rc), "%s", err.msg);
	}
	if (!figs_fill(r, msim_job_result(r->job))) {
		figs_clear(r);
		return run_fail(r, MEMSIM_ENOMEM, "out of memory");
	}
	return 0;
}

size_t
memsim_count(const memsim_run_t *r)
{
	return r->nfigs;
}

const char *
memsim_name(const memsim_run_t *r, size_t i)
{
	return i < r->nfigs ? r->figs[i].name : NULL;
}

static const fig_t *
fig_find(const memsim_run_t *r, const char *name)
{
	for (size_t i = 0; name && i < r->nfigs; i++)
		if (!strcmp(r->figs[i].name, name))
			return &r->figs[i];
	return NULL;
}

int
memsim_get_kind(const memsim_run_t *r, const char *name)
{
	const fig_t *f = fig_find(r, name);
	return f ? f->kind : MEMSIM_ENOTFOUND;
}

/* The figure called name, or an error. */
static int
fig_get(const memsim_run_t *r, const char *name, const fig_t **out)
{
	memsim_run_t *w = (memsim_run_t *)r; /* the message is mutable */
	if (!r->job)
		return run_fail(w, MEMSIM_ESTATE, "the run is not replayed");
	if (!(*out = fig_find(r, name)))
		return run_fail(w, MEMSIM_ENOTFOUND, "no figure '%s'",
				name ? name : "");
	return 0;
}

int
memsim_get_int(const memsim_run_t *r, const char *name, int64_t *value_out)
{
	const fig_t *f;
	int rc = fig_get(r, name, &f);
	if (rc)
		return rc;
	if (f->kind != MEMSIM_INT && f->kind != MEMSIM_BOOL)
		return run_fail((memsim_run_t *)r, MEMSIM_EINVAL, "'%s' is not "
				"an integer", name);
	*value_out = f->i;
	return 0;
}

int
memsim_get_real(const memsim_run_t *r, const char *name, double *value_out)
{
	const fig_t *f;
	int rc = fig_get(r, name, &f);
	if (rc)
		return rc;
	if (f->kind == MEMSIM_TEXT)
		return run_fail((memsim_run_t *)r, MEMSIM_EINVAL, "'%s' is not "
				"a number", name);
	*value_out = f->kind == MEMSIM_REAL ? f->d : (double)f->i;
	return 0;
}

int
memsim_get_text(const memsim_run_t *r, const char *name,
		const char **value_out)
{
	const fig_t *f;
	int rc = fig_get(r, name, &f);
	if (rc)
		return rc;
	if (f->kind != MEMSIM_TEXT)
		return run_fail((memsim_run_t *)r, MEMSIM_EINVAL, "'%s' is not "
				"text", name);
	*value_out = f->t;
	return 0;
}

size_t
memsim_timeline_len(const memsim_run_t *r)
{
	return r->job ? msim_sim_timeline(msim_job_sim(r->job))->n : 0;
}

int
memsim_timeline_get(const memsim_run_t *r, size_t i, memsim_point_t *out)
{
	if (!r->job)
		return run_fail((memsim_run_t *)r, MEMSIM_ESTATE, "the run is "
				"not replayed");
	const msim_timeline_t *tl = msim_sim_timeline(msim_job_sim(r->job));
	if (i >= tl->n)
		return run_fail((memsim_run_t *)r, MEMSIM_EINVAL, "point %zu "
				"of %zu", i, tl->n);
	const msim_sample_t *s = &tl->v[i];
	*out = (memsim_point_t){
		.request = s->request, .time_ns = s->time,
		.allocated = s->allocated, .reserved = s->reserved,
		.active = s->active, .requested = s->requested,
		.largest_free = s->largest_free, .free = s->free,
	};
	return 0;
}

int
memsim_store(memsim_run_t *r, const char *db_path, int64_t *run_id_out)
{
	*r->errmsg = '\0';
	if (run_id_out)
		*run_id_out = -1;
	if (!r->job)
		return run_fail(r, MEMSIM_ESTATE, "the run is not replayed");
	if (!db_path || !*db_path)
		return run_fail(r, MEMSIM_EINVAL, "no database given");
	msim_db_t *db;
	char why[1024];
	int rc = msim_db_open(db_path, &db, why, sizeof(why));
	if (rc)
		return run_fail(r, MEMSIM_EDB, "%s", why);
	int64_t id;
	int existed;
	msim_job_err_t err;
	rc = msim_job_store(r->job, db, MSIM_DB_REPLACE, 0, &id, &existed,
			    &err);
	msim_db_close(db);
	if (rc)
		return run_fail(r, MEMSIM_EDB, "%s: %s", db_path, err.msg);
	fig_t *f = (fig_t *)fig_find(r, "run_id");
	if (!f && !(f = fig_add(r, "run_id", MEMSIM_INT)))
		return run_fail(r, MEMSIM_ENOMEM, "out of memory");
	f->i = id;
	if (run_id_out)
		*run_id_out = id;
	return 0;
}
