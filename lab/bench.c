/* The benchmark of bench.h. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lab/bench.h"
#include "lab/job.h"
#include "sim/engine.h"
#include "sim/error.h"
#include "traces/trace.h"
#include <sys/stat.h>
#include <unistd.h>

typedef struct loop_s {
	msim_req_t *v;
	size_t n;      /* requests in one pass (leftovers freed at its end) */
	uint64_t left; /* requests still to give */
	size_t i;
	msim_time_t offset, span;
} loop_t;

static int
loop_next(void *ctx, msim_req_t *req_out)
{
	loop_t *l = ctx;
	if (l->left == 0)
		return 0;
	if (l->i == l->n) {
		l->i = 0;
		l->offset += l->span + 1;
	}
	*req_out = l->v[l->i++];
	req_out->time += l->offset;
	l->left--;
	return 1;
}

/* The passes in bulk: the array itself, once per pass (times restart at
 * each pass; the engine's clock does not go back). */
static int
loop_batch(void *ctx, const msim_req_t **reqs_out, size_t *n_out)
{
	loop_t *l = ctx;
	if (l->left == 0)
		return 0;
	*reqs_out = l->v;
	*n_out = l->n;
	l->left -= l->n;
	return 1;
}

static const char *
loop_errmsg(void *ctx)
{
	(void)ctx;
	return "";
}

/* A trace as every job opens it (lab/job.h): free_requested rows apply
 * apart from free_completed ones. */
static msim_trace_options_t
bench_topt(void)
{
	msim_job_spec_t spec = {0};
	return msim_job_trace_options(&spec);
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
msim_bench_run(const char *trace_path, uint64_t target_requests,
	       const msim_policy_ops_t *ops, const msim_params_t *pv,
	       msim_bench_result_t *out, char *why, size_t whylen)
{
	msim_trace_t *t = NULL;
	msim_sim_t *sim = NULL;
	loop_t l = {0};
	uint8_t *live = NULL;
	size_t cap = 0, nlive = 0;
	int rc;
	memset(out, 0, sizeof(*out));

	double t0 = now_s();
	msim_trace_options_t topt = bench_topt();
	if ((rc = msim_trace_open(trace_path, &topt, &t, why, whylen)))
		goto done;
	msim_req_t req;
	while ((rc = msim_trace_next(t, &req)) == 1) {
		/* free_requested rows as a run replays them. */
		if (req.kind != MSIM_REQ_ALLOC && req.kind != MSIM_REQ_FREE &&
		    req.kind != MSIM_REQ_FREE_REQUESTED)
			continue;
		if (l.n == cap) {
			cap = cap ? 2 * cap : 65536;
			msim_req_t *v = realloc(l.v, cap * sizeof(*v));
			if (!v) {
				rc = MSIM_ENOMEM;
				goto nomem;
			}
			l.v = v;
		}
		l.v[l.n++] = req;
		if (req.id >= nlive) {
			size_t n = nlive ? nlive : 1024;
			while (n <= req.id)
				n *= 2;
			uint8_t *v = realloc(live, n);
			if (!v) {
				rc = MSIM_ENOMEM;
				goto nomem;
			}
			memset(v + nlive, 0, n - nlive);
			live = v;
			nlive = n;
		}
		if (req.kind == MSIM_REQ_FREE_REQUESTED)
			continue;
		live[req.id] = req.kind == MSIM_REQ_ALLOC;
		out->trace_requests++;
	}
	if (rc < 0) {
		snprintf(why, whylen, "%s", msim_trace_errmsg(t));
		goto done;
	}
	out->read_s = now_s() - t0;
	if (out->trace_requests == 0) {
		snprintf(why, whylen, "%s: no requests", trace_path);
		rc = MSIM_EINVAL;
		goto done;
	}
	/* Free what is still live at the end, so passes can repeat. */
	l.span = l.v[l.n - 1].time;
	for (uint32_t id = 0; id < nlive; id++) {
		if (!live[id])
			continue;
		if (l.n == cap) {
			cap *= 2;
			msim_req_t *v = realloc(l.v, cap * sizeof(*v));
			if (!v) {
				rc = MSIM_ENOMEM;
				goto nomem;
			}
			l.v = v;
		}
		l.v[l.n++] = (msim_req_t){.time = l.span, .id = id,
					  .kind = MSIM_REQ_FREE};
	}
	uint64_t passes = (target_requests + out->trace_requests - 1) /
			  (out->trace_requests ? out->trace_requests : 1);
	l.left = (passes ? passes : 1) * l.n;

	msim_sim_config_t cfg = {
		.source = {loop_next, loop_errmsg, &l, loop_batch},
		.policy = ops,
		.params = pv,
	};
	if ((rc = msim_sim_new(&cfg, &sim, why, whylen)))
		goto done;
	double t1 = now_s();
	rc = msim_sim_run(sim);
	out->replay_s = now_s() - t1;
	if (rc) {
		snprintf(why, whylen, "%s", msim_sim_errmsg(sim));
		goto done;
	}
	msim_summary_t sum;
	msim_stats_t st;
	msim_sim_summary(sim, &sum);
	msim_sim_stats(sim, &st);
	out->requests = sum.requests;
	out->peak_reserved = st.reserved_bytes[MSIM_POOL_ALL].peak;
	out->peak_allocated = st.allocated_bytes[MSIM_POOL_ALL].peak;
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		out->peak_rss_kib = ru.ru_maxrss;
	rc = 0;
	goto done;
nomem:
	snprintf(why, whylen, "%s", msim_strerror(rc));
done:
	msim_sim_destroy(sim);
	msim_trace_close(t);
	free(l.v);
	free(live);
	return rc;
}

/* Reads path to the end as requests; the count and the seconds. */
static int
bench_read(const char *path, uint64_t *n_out, double *s_out, char *why,
	   size_t whylen)
{
	msim_trace_t *t;
	double t0 = now_s();
	msim_trace_options_t topt = bench_topt();
	int rc = msim_trace_open(path, &topt, &t, why, whylen);
	if (rc)
		return rc;
	msim_req_t *v = malloc(4096 * sizeof(*v)); /* as memsim run reads */
	size_t k;
	uint64_t n = 0;
	if (!v) {
		msim_trace_close(t);
		snprintf(why, whylen, "%s", msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	do {
		rc = msim_trace_fill(t, v, 4096, &k);
		for (size_t i = 0; i < k; i++)
			n += v[i].kind != MSIM_REQ_SEGMENT_HINT;
	} while (rc == 1);
	free(v);
	if (rc < 0)
		snprintf(why, whylen, "%s", msim_trace_errmsg(t));
	msim_trace_close(t);
	*s_out = now_s() - t0;
	*n_out = n;
	return rc;
}

int
msim_bench_formats(const char *trace_path, const char *dir,
		   msim_bench_format_t *out, size_t *n_out, char *why,
		   size_t whylen)
{
	size_t n = 0;
	int rc = 0;
	*n_out = 0;
	for (const msim_trace_format_t *const *f = msim_trace_formats(); *f;
	     f++) {
		if (!(*f)->write)
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/memsim-bench-%ld.%s", dir,
			 (long)getpid(), (*f)->name);
		msim_trace_t *t;
		msim_trace_writer_t *w;
		msim_trace_options_t topt = bench_topt();
		if ((rc = msim_trace_open(trace_path, &topt, &t, why, whylen)))
			return rc;
		if ((rc = msim_trace_writer_open(path, *f, &w, why, whylen))) {
			msim_trace_close(t);
			return rc;
		}
		msim_entry_t e;
		while ((rc = msim_trace_next_entry(t, &e)) == 1)
			if ((rc = msim_trace_writer_put(w, &e))) {
				snprintf(why, whylen, "%s",
					 msim_trace_writer_errmsg(w));
				break;
			}
		if (rc < 0 && !why[0])
			snprintf(why, whylen, "%s", msim_trace_errmsg(t));
		msim_trace_close(t);
		int rc2 = msim_trace_writer_close(w, why, whylen);
		if (rc == 0)
			rc = rc2;
		msim_bench_format_t *r = &out[n];
		r->format = (*f)->name;
		struct stat sb;
		r->file_bytes = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
		if (rc == 0)
			rc = bench_read(path, &r->requests, &r->read_s, why,
					whylen);
		remove(path);
		if (rc)
			return rc;
		n++;
	}
	*n_out = n;
	return 0;
}
