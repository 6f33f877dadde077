/*
 * `memsim run` of one input (lab/run.h): the job, its row, and the files
 * the run writes besides its figures.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lab/explain.h"
#include "lab/print.h"
#include "lab/run.h"
#include "plots/plot.h"
#include "policies/registry.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/file.h"
#include "sim/units.h"

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

void
msim_run_print(const msim_job_result_t *r, msim_trace_t *trace, int64_t run_id,
	       const char *db)
{
	char a[32], b[32];
	printf("trace      %s\n", r->trace_path);
	printf("policy     %s%s%s\n", r->policy, *r->params ? " " : "",
	       r->params);
	if (r->cap_bytes)
		printf("cap        %s (%" PRIu64 " bytes)\n",
		       msim_format_bytes(r->cap_bytes, a, sizeof(a)),
		       r->cap_bytes);
	printf("requests   %" PRIu64 "\n", r->sum.requests);
	printf("reserved   peak %-12s now %s\n",
	       msim_format_bytes((uint64_t)r->st.reserved_bytes[0].peak, a,
				 sizeof(a)),
	       msim_format_bytes((uint64_t)r->st.reserved_bytes[0].current,
				 b, sizeof(b)));
	printf("allocated  peak %-12s now %s\n",
	       msim_format_bytes((uint64_t)r->st.allocated_bytes[0].peak, a,
				 sizeof(a)),
	       msim_format_bytes((uint64_t)r->st.allocated_bytes[0].current,
				 b, sizeof(b)));
	printf("requested  peak %s\n",
	       msim_format_bytes((uint64_t)r->st.requested_bytes[0].peak, a,
				 sizeof(a)));
	printf("fragmentation at peak %.4f, mean %.4f; external max %.4f\n",
	       r->sum.frag_at_peak, r->sum.frag_mean, r->sum.ext_frag_max);
	printf("segments   %" PRId64 " allocated, %" PRId64 " freed, peak %"
	       PRId64 "\n", r->st.segment[0].allocated,
	       r->st.segment[0].freed, r->st.segment[0].peak);
	printf("device     %" PRId64 " allocs, %" PRId64 " frees; retries %"
	       PRId64 ", OOMs %" PRId64 "\n", r->st.num_device_alloc,
	       r->st.num_device_free, r->st.num_alloc_retries, r->st.num_ooms);
	if (r->sum.oom_request >= 0)
		printf("OOM        at request %" PRId64 "\n",
		       r->sum.oom_request);
	if (r->sum.addr_same + r->sum.addr_other &&
	    !strcmp(r->addresses, "trace"))
		printf("addresses  %" PRIu64 " of %" PRIu64 " allocations at "
		       "their recorded address\n", r->sum.addr_same,
		       r->sum.addr_same + r->sum.addr_other);
	if (r->sum.ooms_expected || r->sum.ooms_unmatched)
		printf("recorded OOMs  %" PRIu64 " reproduced, %" PRIu64
		       " not\n", r->sum.ooms_expected, r->sum.ooms_unmatched);
	if (r->strategy)
		printf("strategy   %s\n", r->strategy);
	for (size_t i = 0; i < r->nmeta; i++)
		printf("meta       %s %s\n", r->meta[i][0], r->meta[i][1]);
	printf("time       %" PRIu64 " device allocs, %" PRIu64
	       " frees: %s ms modelled\n", r->devtime.mallocs,
	       r->devtime.frees, r->devtime_ms);
	if (*r->settings_note)
		printf("settings   %s\n", r->settings_note);
	if (*r->capacity_note)
		printf("capacity   %s\n", r->capacity_note);
	if (trace)
		msim_print_seed(trace);
	if (*r->snapshot_state)
		printf("snapshot state: %s\n", r->snapshot_state);
	if (run_id >= 0)
		printf("stored     run %" PRId64 " in %s\n", run_id, db);
}
