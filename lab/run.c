/*
 * `memsim run` of one input (lab/run.h): the job, its row, and the files
 * the run writes besides its figures.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lab/explain.h"
#include "lab/run.h"
#include "plots/plot.h"
#include "policies/registry.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/file.h"

int
msim_run_exec(const msim_run_req_t *req, msim_run_t *r, msim_job_err_t *err)
{
	memset(r, 0, sizeof(*r));
	r->run_id = -1;
	msim_job_spec_t spec = req->spec;
	spec.keep_log = req->segments;
	if (req->db && msim_db_open(req->db, &r->db, err->msg,
				    sizeof(err->msg))) {
		err->part = MSIM_JOB_ESTORE;
		return MSIM_EDB;
	}
	if (req->snapshot) {
		if (!(r->rec = msim_snaprec_new(req->snapshot_peak))) {
			err->part = MSIM_JOB_ERUN;
			snprintf(err->msg, sizeof(err->msg), "out of memory");
			msim_run_clear(r);
			return MSIM_ENOMEM;
		}
		spec.observe = msim_snaprec_observe;
		spec.observe_ctx = r->rec;
	}
	int rc = msim_job_open(&spec, r->db != NULL, &r->job, err);
	if (!rc) {
		if (r->rec)
			msim_snaprec_attach(r->rec, r->job);
		rc = msim_job_run(r->job, err);
	}
	if (rc) {
		msim_run_clear(r);
		return rc;
	}
	/* A setting is stored once: running it again replaces its results
	 * under the same run id. */
	int existed;
	if (r->db)
		msim_job_store(r->job, r->db, MSIM_DB_REPLACE, 0, &r->run_id,
			       &existed, &r->store_err);
	return 0;
}

int
msim_run_segments(const msim_run_t *r, const char *path, char *why,
		  size_t whylen)
{
	msim_outfile_t out;
	int rc = msim_outfile_open(&out, path, why, whylen);
	if (rc)
		return rc;
	FILE *fp = out.fp;
	size_t n;
	const msim_seg_event_t *ev =
		msim_device_events(msim_sim_device(msim_job_sim(r->job)), &n);
	fprintf(fp, "request,action,addr,size\n");
	for (size_t i = 0; i < n; i++)
		fprintf(fp, "%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64 "\n",
			ev[i].request, msim_seg_action_name(ev[i].action),
			ev[i].addr, ev[i].size);
	return msim_outfile_commit(&out, why, whylen);
}

int
msim_run_snapshot(const msim_run_t *r, const char *path, char *why,
		  size_t whylen)
{
	return msim_snaprec_write(r->rec, path, why, whylen);
}

int
msim_run_plot(const msim_run_t *r, const char *out, const char *plots_dir,
	      const char *gnuplot, char *why, size_t whylen)
{
	const msim_job_result_t *res = msim_job_result(r->job);
	char title[2048];
	snprintf(title, sizeof(title), "%s: %s %s%s%s", res->trace_path,
		 res->policy, res->params, res->strategy ? " " : "",
		 res->strategy ? res->strategy : "");
	int64_t run_id = r->run_id;
	msim_plot_req_t pr = {
		.kind = MSIM_PLOT_CURVE, .runs = &run_id, .nruns = 1,
		.out = out, .title = title, .plots_dir = plots_dir,
		.gnuplot = gnuplot,
	};
	return msim_plot_draw(r->db, &pr, why, whylen);
}

size_t
msim_run_warnings(const char *policy, const char *conf, bool capped,
		  char (*warn)[256], size_t max)
{
	const msim_policy_ops_t *ops = msim_policy_find(policy);
	msim_params_t pv;
	size_t n = 0;
	if (!ops || msim_params_init(&pv, ops->params))
		return 0;
	if (!msim_params_parse(&pv, conf))
		n = msim_explain_warnings(ops, &pv, capped, warn, max);
	msim_params_clear(&pv);
	return n;
}

void
msim_run_clear(msim_run_t *r)
{
	msim_snaprec_destroy(r->rec);
	msim_job_destroy(r->job);
	msim_db_close(r->db);
	memset(r, 0, sizeof(*r));
	r->run_id = -1;
}
