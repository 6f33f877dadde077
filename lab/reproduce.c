/*
 * Reproduce (lab/reproduce.h): each measured run replayed as the job
 * `memsim run --requests-only` makes of the same setting, figure by
 * figure, every memory_stats() key and the device events.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/job.h"
#include "lab/reproduce.h"
#include "plots/plot.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/metrics.h"

const char *const msim_reproduce_figures[MSIM_REPRODUCE_NFIG] = {
	"reserved_bytes.all.peak", "allocated_bytes.all.peak",
	"requested_bytes.all.peak", "segment.all.peak", "num_device_alloc",
	"num_device_free", "num_alloc_retries", "num_ooms",
};

/* The simulated policy of a measured run (older databases name the mode). */
static const char *
sim_policy(const char *policy)
{
	if (!strcmp(policy, "raw"))
		return "naive";
	if (!strcmp(policy, "async"))
		return "cuda-async";
	return policy;
}

typedef struct stat_cmp_s {
	msim_db_t *db;
	int64_t run_id;
	int total, equal;
} stat_cmp_t;

static void
stat_cmp(const char *name, int64_t value, void *ctx)
{
	stat_cmp_t *c = ctx;
	int64_t stored;
	if (msim_db_run_stat(c->db, c->run_id, name, &stored))
		return;
	c->total++;
	c->equal += stored == value;
}

/* Comparing the device events of a simulation with a run's stored ones. */
typedef struct ev_cmp_s {
	const msim_seg_event_t *ev;
	size_t n, k;
	int equal;
} ev_cmp_t;

static int
event_cmp(const msim_seg_event_t *e, void *ctx)
{
	ev_cmp_t *c = ctx;
	if (c->k >= c->n || c->ev[c->k].request != e->request ||
	    c->ev[c->k].action != e->action || c->ev[c->k].size != e->size)
		c->equal = 0;
	c->k++;
	return 0;
}

/* Simulates r's setting and compares; measured is the stored policy.
 * Returns 0, or an error with why filled. */
static int
compare_one(msim_db_t *db, msim_reproduce_row_t *r, const char *measured,
	    char *why, size_t whylen)
{
	/* The job memsim run --requests-only makes of the same setting:
	 * validate replays alloc and free_completed rows only. */
	msim_job_spec_t spec = {
		.trace = r->trace, .policy = r->policy,
		.conf = r->params, .cap = r->cap, .capacity = r->capacity,
		.requests_only = true,
		.keep_log = true, /* compared with the measured events */
	};
	msim_job_t *job = NULL;
	msim_job_err_t err;
	msim_sim_t *sim = NULL;
	int rc = msim_job_open(&spec, false, &job, &err);
	if (!rc)
		rc = msim_job_run(job, &err);
	if (rc) {
		if (err.part == MSIM_JOB_EPOLICY)
			snprintf(why, whylen, "run %" PRId64 ": no policy "
				 "models '%s'", r->id, measured);
		else if (err.part == MSIM_JOB_EPARAMS ||
			 err.part == MSIM_JOB_ECAP)
			snprintf(why, whylen, "run %" PRId64 ": %.900s", r->id,
				 err.msg);
		else
			snprintf(why, whylen, "%s", err.msg);
		goto out;
	}
	sim = msim_job_sim(job);
	msim_stats_t st;
	msim_summary_t sum;
	msim_sim_stats(sim, &st);
	msim_sim_summary(sim, &sum);
	r->sim_oom = sum.oom_request;

	for (size_t k = 0; k < MSIM_REPRODUCE_NFIG; k++) {
		msim_stats_get(&st, msim_reproduce_figures[k], &r->sim[k]);
		int src = msim_db_run_stat(db, r->id,
					   msim_reproduce_figures[k],
					   &r->meas[k]);
		if (src == MSIM_EDB) {
			snprintf(why, whylen, "%s", msim_db_errmsg(db));
			rc = src;
			goto out;
		}
		/* raw and async measure bytes only: a zero count there means
		 * "not measured". */
		if (!src)
			r->have[k] = !strcmp(r->mode, "torch") || k < 2;
	}
	if (!strcmp(r->mode, "torch")) {
		stat_cmp_t sc = {db, r->id, 0, 0};
		msim_stats_foreach(&st, stat_cmp, &sc);
		r->stats_total = sc.total;
		r->stats_equal = sc.equal;
		ev_cmp_t ec = {.equal = 1};
		ec.ev = msim_device_events(msim_sim_device(sim), &ec.n);
		if ((rc = msim_db_run_events(db, r->id, event_cmp, &ec))) {
			snprintf(why, whylen, "%s", msim_db_errmsg(db));
			goto out;
		}
		r->events = ec.equal && ec.k == ec.n;
	}
out:
	msim_job_destroy(job);
	return rc;
}

static const char *
basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* A measured run: its setting and the mode it was measured in (run_meta
 * "mode"; older databases name it as the policy). */
static int
measured_of(msim_db_t *db, const msim_db_run_t *run, msim_reproduce_row_t *r,
	    char *why, size_t whylen)
{
	*r = (msim_reproduce_row_t){
		.id = run->id, .cap = run->cap_bytes,
		.capacity = run->capacity_bytes,
		.oom_request = run->oom_request,
		.events = -1,
		.trace = strdup(run->trace_path), .params = strdup(run->params),
		.policy = strdup(sim_policy(run->policy)),
	};
	if (!r->trace || !r->params || !r->policy) {
		snprintf(why, whylen, "out of memory");
		return MSIM_ENOMEM;
	}
	int rc = msim_db_run_meta_get(db, r->id, "mode", r->mode,
				      sizeof(r->mode));
	if (rc == MSIM_ENOTFOUND)
		snprintf(r->mode, sizeof(r->mode), "torch");
	else if (rc) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		return rc;
	}
	if (!strcmp(run->policy, "raw") || !strcmp(run->policy, "async"))
		snprintf(r->mode, sizeof(r->mode), "%s", run->policy);
	return 0;
}

/* Whether every figure compared is equal. */
static bool
row_exact(const msim_reproduce_row_t *r)
{
	bool all = r->sim_oom == r->oom_request;
	for (size_t k = 0; k < MSIM_REPRODUCE_NFIG; k++)
		all = all && (!r->have[k] || r->meas[k] == r->sim[k]);
	return all && r->events != 0 && r->stats_equal == r->stats_total;
}

/* Reads run id, simulates it and compares, into row r->n. */
static int
reproduce_one(msim_db_t *db, int64_t id, msim_reproduce_t *out, char *why,
	      size_t whylen)
{
	msim_db_run_t run;
	if (msim_db_run_get(db, id, &run)) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		return MSIM_EDB;
	}
	msim_reproduce_row_t *r = &out->rows[out->n++];
	int rc = measured_of(db, &run, r, why, whylen);
	if (!rc)
		rc = compare_one(db, r, run.policy, why, whylen);
	msim_db_run_clear(&run);
	if (rc)
		return rc;
	r->exact = row_exact(r);
	out->exact += r->exact;
	return 0;
}

int
msim_reproduce_run(msim_db_t *db, msim_reproduce_t *out, char *why,
		   size_t whylen)
{
	memset(out, 0, sizeof(*out));
	int64_t *ids;
	size_t nids;
	msim_db_select_t sel = {.kind = "measured"};
	if (msim_db_list_runs(db, &sel, &ids, &nids)) {
		snprintf(why, whylen, "%s", msim_db_errmsg(db));
		return MSIM_EDB;
	}
	int rc = 0;
	if (nids && !(out->rows = calloc(nids, sizeof(*out->rows)))) {
		snprintf(why, whylen, "out of memory");
		rc = MSIM_ENOMEM;
	}
	for (size_t i = 0; !rc && i < nids; i++)
		rc = reproduce_one(db, ids[i], out, why, whylen);
	free(ids);
	if (rc)
		msim_reproduce_clear(out);
	return rc;
}

void
msim_reproduce_clear(msim_reproduce_t *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->rows[i].trace);
		free(r->rows[i].params);
		free(r->rows[i].policy);
	}
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

int
msim_reproduce_plot(const msim_reproduce_t *r, const char *plots_dir,
		    const char *gnuplot, const char *out, char *why,
		    size_t whylen)
{
	char pairs[] = "/tmp/memsim-pairs-XXXXXX";
	int fd = mkstemp(pairs);
	FILE *pf = fd < 0 ? NULL : fdopen(fd, "w");
	if (!pf) {
		snprintf(why, whylen, "cannot create a temporary file: %s",
			 strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(pairs);
		}
		return MSIM_EIO;
	}
	for (size_t i = 0; i < r->n; i++) {
		const msim_reproduce_row_t *w = &r->rows[i];
		const char *base = basename_of(w->trace);
		fprintf(pf, "\"%" PRId64 " %.*s %s\",%" PRId64 ",%" PRId64 "\n",
			w->id, (int)strcspn(base, "."), base, w->mode,
			w->meas[0], w->sim[0]);
	}
	int rc = 0;
	if (fclose(pf)) {
		snprintf(why, whylen, "cannot write the plot data");
		rc = MSIM_EIO;
	}
	if (!rc)
		rc = msim_plot_run(plots_dir, gnuplot, "validate", pairs, out,
				   "peak reserved: measured vs simulated", why,
				   whylen);
	unlink(pairs);
	return rc;
}
