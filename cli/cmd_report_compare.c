/*
 * memsim report --compare: every measured run of a database (memsim
 * validate) beside a simulation of the same trace under the same setting,
 * made afresh: the policy that models the measured allocator (torch mode:
 * pytorch; raw: naive; async: cuda-async), requests only (alloc and
 * free_completed, as validate replays them), the measured run's cap and
 * device capacity.  Each figure is an exact match or a difference in %;
 * for torch mode all 122 memory_stats() keys and the device events are
 * compared too.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plots/plot.h"
#include "policies/registry.h"
#include "cli/cli.h"
#include "lab/job.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "sim/metrics.h"
#include "sim/results.h"
#include "traces/trace.h"

/* The figures set side by side: what every mode measures first. */
static const char *const figures[] = {
	"reserved_bytes.all.peak", "allocated_bytes.all.peak",
	"requested_bytes.all.peak", "segment.all.peak", "num_device_alloc",
	"num_device_free", "num_alloc_retries", "num_ooms",
};
#define NFIG (sizeof(figures) / sizeof(figures[0]))

typedef struct measured_s {
	int64_t id, oom_request;
	const char *trace, *policy, *params;
	uint64_t cap, capacity;
	char mode[16];
} measured_t;

typedef struct cmp_result_s {
	int64_t meas[NFIG], sim[NFIG];
	bool have[NFIG];
	int64_t sim_oom;
	int stats_total, stats_equal; /* torch: all memory_stats keys */
	int events;                   /* 1 equal, 0 differ, -1 not compared */
} cmp_result_t;

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

/* Simulates m and compares.  Returns 0, or an error with why filled. */
static int
compare_one(msim_db_t *db, const measured_t *m, cmp_result_t *r, char *why,
	    size_t whylen)
{
	memset(r, 0, sizeof(*r));
	r->events = -1;
	/* The job memsim run --requests-only makes of the same setting:
	 * validate replays alloc and free_completed rows only. */
	msim_job_spec_t spec = {
		.trace = m->trace, .policy = sim_policy(m->policy),
		.conf = m->params, .cap = m->cap, .capacity = m->capacity,
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
				 "models '%s'", m->id, m->policy);
		else if (err.part == MSIM_JOB_EPARAMS ||
			 err.part == MSIM_JOB_ECAP)
			snprintf(why, whylen, "run %" PRId64 ": %.900s", m->id,
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

	for (size_t k = 0; k < NFIG; k++) {
		msim_stats_get(&st, figures[k], &r->sim[k]);
		int src = msim_db_run_stat(db, m->id, figures[k], &r->meas[k]);
		if (src == MSIM_EDB) {
			snprintf(why, whylen, "%s", msim_db_errmsg(db));
			rc = src;
			goto out;
		}
		/* raw and async measure bytes only: a zero count there means
		 * "not measured". */
		if (!src)
			r->have[k] = !strcmp(m->mode, "torch") || k < 2;
	}
	if (!strcmp(m->mode, "torch")) {
		stat_cmp_t sc = {db, m->id, 0, 0};
		msim_stats_foreach(&st, stat_cmp, &sc);
		r->stats_total = sc.total;
		r->stats_equal = sc.equal;
		ev_cmp_t ec = {.equal = 1};
		ec.ev = msim_device_events(msim_sim_device(sim), &ec.n);
		if ((rc = msim_db_run_events(db, m->id, event_cmp, &ec))) {
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
pct(int64_t meas, int64_t sim, char *buf, size_t n)
{
	if (meas == sim)
		snprintf(buf, n, "exact");
	else if (meas == 0)
		snprintf(buf, n, "n/a");
	else
		snprintf(buf, n, "%+.2f%%",
			 100.0 * (double)(sim - meas) / (double)meas);
	return buf;
}

static const char *
basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* What a measured run is: its setting and the mode it was measured in
 * (run_meta "mode"; older databases name it as the policy). */
static void
measured_of(msim_db_t *db, const msim_db_run_t *run, measured_t *m)
{
	*m = (measured_t){
		.id = run->id,
		.trace = run->trace_path,
		.policy = run->policy,
		.params = run->params,
		.cap = run->cap_bytes,
		.capacity = run->capacity_bytes,
		.oom_request = run->oom_request,
	};
	int rc = msim_db_run_meta_get(db, m->id, "mode", m->mode,
				      sizeof(m->mode));
	if (rc == MSIM_ENOTFOUND)
		snprintf(m->mode, sizeof(m->mode), "torch");
	else if (rc)
		msim_cli_die("%s", msim_db_errmsg(db));
	if (!strcmp(m->policy, "raw") || !strcmp(m->policy, "async"))
		snprintf(m->mode, sizeof(m->mode), "%s", m->policy);
}

int
msim_report_compare(msim_db_t *mdb, int json, int csv, const char *plot)
{
	msim_db_t *db = mdb;
	int64_t *ids;
	size_t nids;
	msim_db_select_t sel = {.kind = "measured"};
	if (msim_db_list_runs(db, &sel, &ids, &nids))
		msim_cli_die("%s", msim_db_errmsg(db));
	FILE *pf = NULL;
	char pairs[] = "/tmp/memsim-pairs-XXXXXX";
	if (plot) {
		int fd = mkstemp(pairs);
		if (fd < 0 || !(pf = fdopen(fd, "w")))
			msim_cli_die("cannot create a temporary file: %s",
				     strerror(errno));
	}
	if (csv) {
		printf("run_id,trace,mode,policy,params,cap_bytes");
		for (size_t k = 0; k < NFIG; k++)
			printf(",measured.%s,simulated.%s", figures[k],
			       figures[k]);
		printf(",measured_oom_request,simulated_oom_request,"
		       "stats_equal,stats_total,events_equal\n");
	} else if (json) {
		printf("[");
	} else {
		printf("%5s  %-22s %-6s %-54s %12s %12s %9s %8s %7s\n", "run",
		       "trace", "mode", "setting", "measured", "simulated",
		       "reserved", "stats", "events");
	}
	int n = 0, exact = 0;
	for (size_t i = 0; i < nids; i++) {
		msim_db_run_t run;
		if (msim_db_run_get(db, ids[i], &run))
			msim_cli_die("%s", msim_db_errmsg(db));
		measured_t m;
		measured_of(db, &run, &m);
		cmp_result_t r;
		char why[1024];
		if (compare_one(db, &m, &r, why, sizeof(why)))
			msim_cli_die("%s", why);
		bool all = r.sim_oom == m.oom_request;
		for (size_t k = 0; k < NFIG; k++)
			all = all && (!r.have[k] || r.meas[k] == r.sim[k]);
		all = all && r.events != 0 && r.stats_equal == r.stats_total;
		n++;
		exact += all;
		char setting[256], d[32];
		const char *params = *m.params ? m.params : "(defaults)";
		if (m.cap)
			snprintf(setting, sizeof(setting), "%s cap %" PRIu64,
				 params, m.cap);
		else
			snprintf(setting, sizeof(setting), "%s", params);
		if (pf)
			fprintf(pf, "\"%" PRId64 " %.*s %s\",%" PRId64 ",%"
				PRId64 "\n", m.id,
				(int)strcspn(basename_of(m.trace), "."),
				basename_of(m.trace), m.mode, r.meas[0],
				r.sim[0]);
		if (csv) {
			printf("%" PRId64 ",%s,%s,%s,\"%s\",%" PRIu64, m.id,
			       m.trace, m.mode, sim_policy(m.policy), m.params,
			       m.cap);
			for (size_t k = 0; k < NFIG; k++) {
				if (r.have[k])
					printf(",%" PRId64, r.meas[k]);
				else
					printf(",");
				printf(",%" PRId64, r.sim[k]);
			}
			printf(",%" PRId64 ",%" PRId64 ",%d,%d,%s\n",
			       m.oom_request, r.sim_oom, r.stats_equal,
			       r.stats_total, r.events < 0 ? "" : r.events
							       ? "1" : "0");
		} else if (json) {
			printf("%s\n {\"run_id\": %" PRId64 ", \"trace\": ",
			       n > 1 ? "," : "", m.id);
			msim_cli_json_str(stdout, m.trace);
			printf(", \"mode\": \"%s\", \"policy\": \"%s\", "
			       "\"params\": ", m.mode, sim_policy(m.policy));
			msim_cli_json_str(stdout, m.params);
			printf(", \"cap_bytes\": %" PRIu64, m.cap);
			for (size_t k = 0; k < NFIG; k++) {
				if (r.have[k])
					printf(", \"measured.%s\": %" PRId64,
					       figures[k], r.meas[k]);
				printf(", \"simulated.%s\": %" PRId64,
				       figures[k], r.sim[k]);
			}
			printf(", \"measured.oom_request\": %" PRId64
			       ", \"simulated.oom_request\": %" PRId64
			       ", \"exact\": %s}", m.oom_request, r.sim_oom,
			       all ? "true" : "false");
		} else {
			char stats[32], events[16];
			if (r.stats_total)
				snprintf(stats, sizeof(stats), "%d/%d",
					 r.stats_equal, r.stats_total);
			else
				snprintf(stats, sizeof(stats), "-");
			snprintf(events, sizeof(events), "%s",
				 r.events < 0 ? "-" : r.events ? "equal"
							       : "differ");
			printf("%5" PRId64 "  %-22.22s %-6s %-54.54s %12" PRId64
			       " %12" PRId64 " %9s %8s %7s\n", m.id,
			       basename_of(m.trace), m.mode, setting, r.meas[0],
			       r.sim[0], pct(r.meas[0], r.sim[0], d, sizeof(d)),
			       stats, events);
		}
		msim_db_run_clear(&run);
	}
	free(ids);
	if (json)
		printf("\n]\n");
	else if (!csv)
		printf("\n%d of %d measured runs reproduced exactly (every "
		       "figure compared)\n", exact, n);
	if (pf) {
		if (fclose(pf))
			msim_cli_die("cannot write the plot data");
		char why[1024];
		int rc = msim_plot_run(msim_cli_plots_dir(), GNUPLOT_PATH,
				       "validate", pairs, plot,
				       "peak reserved: measured vs simulated",
				       why, sizeof(why));
		unlink(pairs);
		if (rc)
			msim_cli_die("-o: %s", why);
		if (!json && !csv)
			printf("plotted %s\n", plot);
	}
	if (!n)
		msim_cli_die("no measured runs in the database (memsim "
			     "validate --db stores them)");
	return 0;
}
