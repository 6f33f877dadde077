/*
 * The public API of memsim.h over the job of lab/job.h: a run collects a
 * setting (trace, policy, options), opens and replays it as one job, and
 * keeps its figures as a flat list of named values (lab/figures.h, the list
 * `memsim run --json` prints) in the order of
 * `memsim run --json`, so C and Python users read the same keys.  Only
 * the memsim_* functions are exported from the shared library
 * (Makefile.am: -export-symbols-regex); everything else stays inside.
 */
#include <config.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "lib/handle.h"
#include "lib/memsim.h"
#include "lab/explain.h"
#include "lab/figures.h"
#include "lab/fit.h"
#include "lab/job.h"
#include "lab/record.h"
#include "lab/tune.h"
#include "policies/registry.h"
#include "sim/error.h"
#include "sim/grow.h"
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
/* So are the kinds of figure (lab/figures.h). */
static_assert((int)MEMSIM_INT == (int)MSIM_FIG_INT, "INT");
static_assert((int)MEMSIM_REAL == (int)MSIM_FIG_REAL, "REAL");
static_assert((int)MEMSIM_TEXT == (int)MSIM_FIG_TEXT, "TEXT");
static_assert((int)MEMSIM_BOOL == (int)MSIM_FIG_BOOL, "BOOL");

typedef msim_fig_t fig_t;

/* Strings of the setting the run owns (the job borrows them). */
enum { S_TRACE, S_POLICY, S_CONF, S_ADDRESSES, S_TRANSFORM, S_CALIBRATION,
       S_N };

/* A run.  The caller holds a handle to it (run_get()), never its
 * address. */
typedef struct run_s {
	char *s[S_N];
	msim_job_spec_t spec;
	msim_timemodel_t *tm;
	msim_job_t *job;      /* after memsim_replay() */
	bool replayed;
	msim_figs_t figs;     /* lab/figures.h: those of memsim run --json */
	/* memsim_load(): the stored run's timeline (no job). */
	msim_sample_t *stored_tl;
	size_t nstored_tl;
	bool loaded;
	bool explained;       /* memsim_explain(): figures, no job */
	uint64_t context_bytes; /* memsim_explain(): CUDA context, bytes */
	char errmsg[1200];
} run_t;

static int
run_fail(run_t *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
run_fail(run_t *r, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
	return rc;
}

/* Replaces the owned string slot k by a copy of v (NULL: none). */
static int
run_str(run_t *r, int k, const char *v)
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

/* Puts r in a slot of the handles' table (lib/handle.h); its handle in
 * *out (NULL when memory is short). */
static int
handle_new(run_t *r, memsim_run_t **out)
{
	void *h;
	int rc = msim_handle_new(MSIM_HANDLE_RUN, r, &h);
	*out = h;
	return rc;
}

/* The run a handle names: MEMSIM_EINVAL for NULL or no run's handle,
 * MEMSIM_ESTATE for a closed run.  With take, the slot is freed (the
 * caller destroys the run). */
static int
handle_run(const memsim_run_t *h, bool take, run_t **r_out)
{
	void *r;
	int rc = msim_handle_get(h, MSIM_HANDLE_RUN, take, &r);
	*r_out = r;
	return rc;
}

/* The message of a handle that is not an open run. */
static const char *
handle_msg(int rc)
{
	return rc == MEMSIM_ESTATE ? "the run is closed"
				   : "not a run (NULL or not from memsim_open())";
}

/* Declares r, the run of handle h, or returns handle_run()'s error. */
#define RUN_OF(h, r)                                                          \
	run_t *r;                                                             \
	do {                                                                  \
		int hrc_ = handle_run((h), false, &r);                        \
		if (hrc_)                                                     \
			return hrc_;                                          \
	} while (0)

/*
 * GSL's default error handler aborts; the library checks GSL's status
 * codes and gives its input to GSL checked, so the handler is reached
 * only when the host runs out of memory.  It is turned off once for the
 * process (pthread_once, at the first memsim_open()), and only where the
 * caller has installed none of their own: replays in several threads
 * change no process-wide state.
 */
static pthread_once_t gsl_once = PTHREAD_ONCE_INIT;

static void
gsl_quiet(void)
{
	gsl_error_handler_t *prev = gsl_set_error_handler_off();
	if (prev)
		gsl_set_error_handler(prev);
}

static void
run_destroy(run_t *r)
{
	if (!r)
		return;
	msim_job_destroy(r->job);
	msim_timemodel_destroy(r->tm);
	msim_figs_clear(&r->figs);
	free(r->stored_tl);
	for (int k = 0; k < S_N; k++)
		free(r->s[k]);
	free(r);
}

/* A new run in *rp and its handle in *out; MEMSIM_ENOMEM (both NULL). */
static int
run_new(memsim_run_t **out, run_t **rp)
{
	run_t *r = calloc(1, sizeof(*r));
	*rp = r;
	*out = NULL;
	if (!r)
		return MEMSIM_ENOMEM;
	if (handle_new(r, out)) {
		free(r);
		*rp = NULL;
		return MEMSIM_ENOMEM;
	}
	return 0;
}

int
memsim_open(memsim_run_t **out, const char *trace)
{
	if (!out)
		return MEMSIM_EINVAL;
	pthread_once(&gsl_once, gsl_quiet);
	run_t *r;
	if (run_new(out, &r))
		return MEMSIM_ENOMEM;
	if (!trace || !*trace)
		return run_fail(r, MEMSIM_EINVAL, "no trace given");
	int rc;
	if ((rc = run_str(r, S_TRACE, trace)) ||
	    (rc = run_str(r, S_POLICY, MSIM_POLICY_DEFAULT)))
		return rc;
	r->spec.trace = r->s[S_TRACE];
	r->spec.policy = r->s[S_POLICY];
	return 0;
}

void
memsim_close(memsim_run_t *h)
{
	run_t *r;
	if (!handle_run(h, true, &r))
		run_destroy(r);
}

const char *
memsim_errmsg(const memsim_run_t *h)
{
	if (!h)
		return "no run (memsim_open() ran out of memory, or was given "
		       "no place for the run)";
	run_t *r;
	int rc = handle_run(h, false, &r);
	return rc ? handle_msg(rc) : r->errmsg;
}

int
memsim_set_policy(memsim_run_t *h, const char *policy, const char *conf)
{
	RUN_OF(h, r);
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
opt_bool(run_t *r, const char *name, const char *v, bool *out)
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
opt_bytes(run_t *r, const char *name, const char *v, uint64_t *out)
{
	if (msim_parse_bytes(v, out))
		return run_fail(r, MEMSIM_EINVAL, "%s: '%s' is not a size in "
				"bytes", name, v);
	return 0;
}

static int run_option(run_t *r, const char *name, const char *value);

int
memsim_set_option(memsim_run_t *h, const char *name, const char *value)
{
	RUN_OF(h, r);
	return run_option(r, name, value);
}

static int
run_option(run_t *r, const char *name, const char *value)
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
	if (!strcmp(name, "context_bytes"))
		return opt_bytes(r, name, value, &r->context_bytes);
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
			rc = run_option(r, "addresses", "trace");
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
		int rc = msim_timemodel_load(value, &tm, why, sizeof(why));
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

/* Clears r's message and marks it replayed: 0, or MEMSIM_ESTATE when it
 * was already (memsim_replay() and memsim_explain() run once). */
static int
run_once(run_t *r)
{
	*r->errmsg = '\0';
	if (r->replayed)
		return run_fail(r, MEMSIM_ESTATE, "the run was replayed "
				"already");
	if (!r->spec.trace || r->loaded) /* its open or load failed */
		return run_fail(r, MEMSIM_ESTATE, "no trace to replay (the "
				"run's memsim_open() failed, or it was loaded)");
	r->replayed = true;
	return 0;
}

int
memsim_replay(memsim_run_t *h)
{
	RUN_OF(h, r);
	int rc = run_once(r);
	if (rc)
		return rc;
	msim_job_err_t err;
	/* GSL's handler: gsl_quiet().  Opened as a stored job, so memsim_store() keeps the blocks at
	 * peak as `memsim run --db` does. */
	rc = msim_job_open(&r->spec, true, &r->job, &err);
	if (!rc)
		rc = msim_job_run(r->job, &err);
	if (rc) {
		msim_job_destroy(r->job);
		r->job = NULL;
		return run_fail(r, job_code(&err, rc), "%s", err.msg);
	}
	if (msim_figs_job(&r->figs, r->job)) {
		msim_figs_clear(&r->figs);
		return run_fail(r, MEMSIM_ENOMEM, "out of memory");
	}
	return 0;
}

int
memsim_explain(memsim_run_t *h)
{
	RUN_OF(h, r);
	int rc = run_once(r);
	if (rc)
		return rc;
	msim_explain_config_t cfg = {.spec = r->spec, .alternatives = true,
				     .context_bytes = r->context_bytes};
	msim_explain_t *ex;
	char why[1024];
	rc = msim_explain_run(&cfg, &ex, why, sizeof(why));
	if (rc)
		return run_fail(r, rc == MSIM_ENOMEM ? MEMSIM_ENOMEM :
				MEMSIM_EINPUT, "%s", why);
	/* `memsim explain --json`'s figures, less its empty lists and
	 * objects (memsim.h has no kind for them). */
	rc = msim_explain_figs(&r->figs, ex, r->spec.trace);
	msim_explain_destroy(ex);
	if (rc) {
		msim_figs_clear(&r->figs);
		return run_fail(r, MEMSIM_ENOMEM, "out of memory");
	}
	msim_figs_drop_empty(&r->figs);
	r->explained = true;
	return 0;
}

size_t
memsim_count(const memsim_run_t *h)
{
	run_t *r;
	return handle_run(h, false, &r) ? 0 : r->figs.n;
}

const char *
memsim_name(const memsim_run_t *h, size_t i)
{
	run_t *r;
	if (handle_run(h, false, &r))
		return NULL;
	return i < r->figs.n ? r->figs.v[i].name : NULL;
}

int
memsim_get_kind(const memsim_run_t *h, const char *name)
{
	RUN_OF(h, r);
	if (!name)
		return run_fail(r, MEMSIM_EINVAL, "no figure name given");
	const fig_t *f = msim_figs_find(&r->figs, name);
	return f ? f->kind : MEMSIM_ENOTFOUND;
}

/* The figure called name, or an error. */
static int
fig_get(const memsim_run_t *h, const char *name, const void *value_out,
	run_t **rp, const fig_t **out)
{
	RUN_OF(h, w);
	const run_t *r = w;
	*rp = w;
	if (!name || !value_out)
		return run_fail(w, MEMSIM_EINVAL, "no figure name or no place "
				"for its value");
	if (!r->job && !r->loaded && !r->explained)
		return run_fail(w, MEMSIM_ESTATE, "the run is not replayed");
	if (!(*out = msim_figs_find(&r->figs, name)))
		return run_fail(w, MEMSIM_ENOTFOUND, "no figure '%s'",
				name ? name : "");
	return 0;
}

int
memsim_get_int(const memsim_run_t *h, const char *name, int64_t *value_out)
{
	const fig_t *f;
	run_t *r;
	int rc = fig_get(h, name, value_out, &r, &f);
	if (rc)
		return rc;
	if (f->kind != MEMSIM_INT && f->kind != MEMSIM_BOOL)
		return run_fail(r, MEMSIM_EINVAL, "'%s' is not "
				"an integer", name);
	*value_out = f->i;
	return 0;
}

int
memsim_get_real(const memsim_run_t *h, const char *name, double *value_out)
{
	const fig_t *f;
	run_t *r;
	int rc = fig_get(h, name, value_out, &r, &f);
	if (rc)
		return rc;
	if (f->kind == MEMSIM_TEXT)
		return run_fail(r, MEMSIM_EINVAL, "'%s' is not "
				"a number", name);
	*value_out = f->kind == MEMSIM_REAL ? f->d : (double)f->i;
	return 0;
}

int
memsim_get_text(const memsim_run_t *h, const char *name,
		const char **value_out)
{
	const fig_t *f;
	run_t *r;
	int rc = fig_get(h, name, value_out, &r, &f);
	if (rc)
		return rc;
	if (f->kind != MEMSIM_TEXT)
		return run_fail(r, MEMSIM_EINVAL, "'%s' is not "
				"text", name);
	*value_out = f->t;
	return 0;
}

static size_t run_tl_len(const run_t *r);

size_t
memsim_timeline_len(const memsim_run_t *h)
{
	run_t *r;
	return handle_run(h, false, &r) ? 0 : run_tl_len(r);
}

static size_t
run_tl_len(const run_t *r)
{
	return r->job ? msim_sim_timeline(msim_job_sim(r->job))->n
		      : r->nstored_tl;
}

int
memsim_timeline_get(const memsim_run_t *h, size_t i, memsim_point_t *out)
{
	RUN_OF(h, r);
	if (!out)
		return run_fail(r, MEMSIM_EINVAL, "no place for the point");
	if (!r->job && !r->loaded)
		return run_fail(r, MEMSIM_ESTATE, "the run is "
				"not replayed");
	size_t n = run_tl_len(r);
	if (i >= n)
		return run_fail(r, MEMSIM_EINVAL, "point %zu "
				"of %zu", i, n);
	const msim_sample_t *s = r->job
		? &msim_sim_timeline(msim_job_sim(r->job))->v[i]
		: &r->stored_tl[i];
	*out = (memsim_point_t){
		.request = s->request, .time_ns = s->time,
		.allocated = s->allocated, .reserved = s->reserved,
		.active = s->active, .requested = s->requested,
		.largest_free = s->largest_free, .free = s->free,
	};
	return 0;
}

int
memsim_store(memsim_run_t *h, const char *db_path, int64_t *run_id_out)
{
	if (run_id_out)
		*run_id_out = -1;
	RUN_OF(h, r);
	*r->errmsg = '\0';
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
	if (msim_figs_int(&r->figs, "run_id", id))
		return run_fail(r, MEMSIM_ENOMEM, "out of memory");
	if (run_id_out)
		*run_id_out = id;
	return 0;
}

/* The message of the last memsim_list_runs() failure. */
static _Thread_local char list_errmsg[1200];

/* A read-only database at path; a missing file is MEMSIM_ENOTFOUND. */
static int
db_open_read(const char *path, msim_db_t **db, char *why, size_t whylen)
{
	if (!path || !*path) {
		snprintf(why, whylen, "no database given");
		return MEMSIM_EINVAL;
	}
	int rc = msim_db_open_readonly(path, db, why, whylen);
	return !rc ? 0 : rc == MSIM_ENOTFOUND ? MEMSIM_ENOTFOUND : MEMSIM_EDB;
}

int
memsim_list_runs(const char *db_path, int64_t *ids, size_t max,
		 size_t *n_out, const char **errmsg_out)
{
	msim_db_t *db;
	int64_t *all = NULL;
	size_t n = 0;
	*list_errmsg = '\0';
	if (errmsg_out)
		*errmsg_out = list_errmsg;
	if (!n_out || (!ids && max)) {
		snprintf(list_errmsg, sizeof(list_errmsg), "%s",
			 !n_out ? "no place for the number of runs"
				: "no buffer for the ids");
		return MEMSIM_EINVAL;
	}
	*n_out = 0;
	int rc = db_open_read(db_path, &db, list_errmsg,
			      sizeof(list_errmsg));
	if (rc)
		return rc;
	msim_db_select_t sel = {0};
	if (msim_db_list_runs(db, &sel, &all, &n)) {
		snprintf(list_errmsg, sizeof(list_errmsg), "%s",
			 msim_db_errmsg(db));
		msim_db_close(db);
		return MEMSIM_EDB;
	}
	for (size_t i = 0; i < n && i < max; i++)
		ids[i] = all[i];
	*n_out = n;
	free(all);
	msim_db_close(db);
	return 0;
}

typedef struct tl_ctx_s {
	run_t *r;
	size_t cap;
} tl_ctx_t;

static int
tl_add(const msim_sample_t *s, void *ctx)
{
	tl_ctx_t *c = ctx;
	run_t *r = c->r;
	if (MSIM_GROW(r->stored_tl, c->cap, r->nstored_tl + 1, 1024))
		return MEMSIM_ENOMEM;
	r->stored_tl[r->nstored_tl++] = *s;
	return 0;
}

int
memsim_load(memsim_run_t **out, const char *db_path, int64_t run_id)
{
	if (!out)
		return MEMSIM_EINVAL;
	run_t *r;
	if (run_new(out, &r))
		return MEMSIM_ENOMEM;
	r->replayed = true; /* nothing to replay */
	msim_db_t *db;
	int rc = db_open_read(db_path, &db, r->errmsg, sizeof(r->errmsg));
	if (rc)
		return rc;
	rc = msim_figs_stored(&r->figs, db, run_id);
	if (rc == MSIM_ENOTFOUND) {
		rc = run_fail(r, MEMSIM_ENOTFOUND, "%s: no run %" PRId64,
			      db_path, run_id);
	} else if (rc) {
		rc = run_fail(r, rc == MSIM_ENOMEM ? MEMSIM_ENOMEM : MEMSIM_EDB,
			      "%s", rc == MSIM_ENOMEM ? "out of memory"
						      : msim_db_errmsg(db));
	} else {
		tl_ctx_t c = {r, 0};
		rc = msim_db_run_timeline(db, run_id, tl_add, &c);
		if (rc == MSIM_ENOTFOUND)
			rc = 0; /* a run without samples */
		else if (rc)
			rc = run_fail(r, rc == MEMSIM_ENOMEM ? MEMSIM_ENOMEM
					 : MEMSIM_EDB, "%s", rc == MEMSIM_ENOMEM
					 ? "out of memory" : msim_db_errmsg(db));
	}
	msim_db_close(db);
	if (rc) {
		msim_figs_clear(&r->figs);
		return rc;
	}
	r->loaded = true;
	return 0;
}

/* why may be NULL: the lab calls write into a buffer of their own then. */
static char *
lab_why(char *why, size_t whylen, char *own, size_t ownlen, size_t *len)
{
	*len = why && whylen ? whylen : ownlen;
	return why && whylen ? why : own;
}

int
memsim_parse_bytes(const char *text, uint64_t *out)
{
	if (!text || !out)
		return MEMSIM_EINVAL;
	return msim_parse_bytes(text, out) ? MEMSIM_EINVAL : 0;
}

int
memsim_tune(const char *trace, uint64_t cap, const char *db_path,
	    char *conf_out, size_t n, char *why, size_t whylen)
{
	char own[1024];
	size_t wl;
	char *w = lab_why(why, whylen, own, sizeof(own), &wl);
	w[0] = '\0';
	if (!trace || !db_path || !cap || !conf_out || !n) {
		snprintf(w, wl, "memsim_tune: a trace, a cap, a database and "
			 "a buffer are required");
		return MEMSIM_EINVAL;
	}
	msim_tune_spec_t spec = {
		.trace = trace, .cap = cap, .db_path = db_path,
		.grid = msim_tune_grid, .ngrid = MSIM_TUNE_NGRID, .jobs = 0,
	};
	msim_tune_result_t res;
	int rc = msim_tune_run(&spec, &res, w, wl);
	conf_out[0] = '\0';
	if (rc)
		return rc;
	if (*res.store_err) {
		snprintf(w, wl, "%s", res.store_err);
		return MEMSIM_EDB;
	}
	if (!res.fits)
		return 1;
	snprintf(conf_out, n, "%s", res.best.params);
	return 0;
}

int
memsim_fit(const char *pattern, const char *name, long lo, long hi,
	   uint64_t cap, const char *policy, long *best_out, char *why,
	   size_t whylen)
{
	char own[1024];
	size_t wl;
	char *w = lab_why(why, whylen, own, sizeof(own), &wl);
	w[0] = '\0';
	if (!pattern || !name || !cap || lo > hi || !best_out) {
		snprintf(w, wl, "memsim_fit: a pattern, a name, a cap and "
			 "lo <= hi are required");
		return MEMSIM_EINVAL;
	}
	char *pat = (char *)pattern;
	if (!msim_record_has(&pat, 1, name)) {
		snprintf(w, wl, "memsim_fit: '%s' has no {%s}", pattern, name);
		return MEMSIM_EINVAL;
	}
	msim_fit_spec_t spec = {
		.cap = cap, .name = name, .lo = lo, .hi = hi,
		.policy = policy, .pattern = pattern,
	};
	msim_fit_result_t res;
	int rc = msim_fit_run(&spec, &res, w, wl);
	if (!rc)
		*best_out = res.best;
	msim_fit_clear(&res);
	return rc;
}

#ifndef PYTHON_DIR
#define PYTHON_DIR ""
#endif

int
memsim_record(const char *out, char *const *argv, int argc, char *why,
	      size_t whylen)
{
	char own[1024];
	size_t wl;
	char *w = lab_why(why, whylen, own, sizeof(own), &wl);
	w[0] = '\0';
	if (!out || !argv || argc < 1) {
		snprintf(w, wl, "memsim_record: an output and a command are "
			 "required");
		return MEMSIM_EINVAL;
	}
	static const char *const dirs[] = {PYTHON_DIR, NULL};
	msim_record_opts_t o = {.dirs = dirs};
	return msim_record_exec(&o, out, NULL, 0, argv, argc, w, wl);
}
