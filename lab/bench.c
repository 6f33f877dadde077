/* The benchmark of bench.h. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "lab/bench.h"
#include "lab/job.h"
#include "lab/mincsv.h"
#include "policies/registry.h"
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

static double
cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads trace_path into l->v (what a run replays), then appends a free
 * of every block still live so passes can repeat when repeat is set.
 * Sets *nreq to the allocs and frees of one pass. */
static int
bench_load(const char *trace_path, bool repeat, loop_t *l, uint64_t *nreq,
	   char *why, size_t whylen)
{
	msim_trace_t *t = NULL;
	uint8_t *live = NULL;
	size_t cap = 0, nlive = 0;
	int rc;
	msim_trace_options_t topt = bench_topt();
	if ((rc = msim_trace_open(trace_path, &topt, &t, why, whylen)))
		goto done;
	msim_req_t req;
	while ((rc = msim_trace_next(t, &req)) == 1) {
		/* free_requested rows as a run replays them. */
		if (req.kind != MSIM_REQ_ALLOC && req.kind != MSIM_REQ_FREE &&
		    req.kind != MSIM_REQ_FREE_REQUESTED)
			continue;
		if (l->n == cap) {
			cap = cap ? 2 * cap : 65536;
			msim_req_t *v = realloc(l->v, cap * sizeof(*v));
			if (!v) {
				rc = MSIM_ENOMEM;
				goto nomem;
			}
			l->v = v;
		}
		l->v[l->n++] = req;
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
		(*nreq)++;
	}
	if (rc < 0) {
		snprintf(why, whylen, "%s", msim_trace_errmsg(t));
		goto done;
	}
	if (*nreq == 0) {
		snprintf(why, whylen, "%s: no requests", trace_path);
		rc = MSIM_EINVAL;
		goto done;
	}
	l->span = l->v[l->n - 1].time;
	/* Free what is still live at the end, so passes can repeat. */
	for (uint32_t id = 0; repeat && id < nlive; id++) {
		if (!live[id])
			continue;
		if (l->n == cap) {
			cap *= 2;
			msim_req_t *v = realloc(l->v, cap * sizeof(*v));
			if (!v) {
				rc = MSIM_ENOMEM;
				goto nomem;
			}
			l->v = v;
		}
		l->v[l->n++] = (msim_req_t){.time = l->span, .id = id,
					    .kind = MSIM_REQ_FREE};
	}
	rc = 0;
	goto done;
nomem:
	snprintf(why, whylen, "%s", msim_strerror(rc));
done:
	msim_trace_close(t);
	free(live);
	return rc;
}

int
msim_bench_run(const char *trace_path, uint64_t target_requests,
	       const msim_policy_ops_t *ops, const msim_params_t *pv,
	       msim_bench_result_t *out, char *why, size_t whylen)
{
	msim_sim_t *sim = NULL;
	loop_t l = {0};
	int rc;
	memset(out, 0, sizeof(*out));

	double t0 = now_s();
	if ((rc = bench_load(trace_path, true, &l, &out->trace_requests, why,
			     whylen)))
		goto done;
	out->read_s = now_s() - t0;
	uint64_t passes = (target_requests + out->trace_requests - 1) /
			  out->trace_requests;
	l.left = (passes ? passes : 1) * l.n;

	msim_sim_config_t cfg = {
		.source = {loop_next, loop_errmsg, &l, loop_batch},
		.policy = ops,
		.params = pv,
	};
	if ((rc = msim_sim_new(&cfg, &sim, why, whylen)))
		goto done;
	double t1 = now_s(), c1 = cpu_s();
	rc = msim_sim_run(sim);
	out->replay_s = now_s() - t1;
	out->replay_cpu_s = cpu_s() - c1;
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
done:
	msim_sim_destroy(sim);
	free(l.v);
	return rc;
}

/* Why the minimal path stopped at request at of path. */
static void
minimal_why(int rc, const char *path, size_t at, char *why, size_t whylen)
{
	if (rc == MSIM_ENOTSUP)
		snprintf(why, whylen, "%s: request %zu uses what the minimal "
			 "path does not model (streams, private pools, "
			 "flagged requests, a full device)", path, at + 1);
	else
		snprintf(why, whylen, "%s: request %zu: %s", path, at + 1,
			 msim_strerror(rc));
}

int
msim_bench_same(const char *trace_path, msim_bench_same_t *out, char *why,
		size_t whylen)
{
	loop_t l = {0};
	msim_sim_t *sim = NULL;
	msim_minreplay_t *m = NULL;
	uint64_t nreq = 0;
	int rc;
	memset(out, 0, sizeof(*out));
	if ((rc = bench_load(trace_path, false, &l, &nreq, why, whylen)))
		goto done;
	const msim_policy_ops_t *ops = msim_policy_find(MSIM_POLICY_PYTORCH);
	msim_params_t pv;
	if (!ops || msim_params_init(&pv, ops->params)) {
		rc = MSIM_ENOMEM;
		snprintf(why, whylen, "%s", msim_strerror(rc));
		goto done;
	}
	l.left = l.n;
	msim_sim_config_t cfg = {
		.source = {loop_next, loop_errmsg, &l, loop_batch},
		.policy = ops,
		.params = &pv,
	};
	if (!(rc = msim_sim_new(&cfg, &sim, why, whylen)) &&
	    (rc = msim_sim_run(sim)))
		snprintf(why, whylen, "%s", msim_sim_errmsg(sim));
	msim_params_clear(&pv);
	if (rc)
		goto done;
	msim_sim_stats(sim, &out->memsim);
	if ((rc = msim_minreplay_new(&m))) {
		snprintf(why, whylen, "%s", msim_strerror(rc));
		goto done;
	}
	size_t at;
	if ((rc = msim_minreplay_apply(m, l.v, l.n, &at))) {
		minimal_why(rc, trace_path, at, why, whylen);
		goto done;
	}
	msim_minreplay_stats(m, &out->minimal);
	out->same = msim_bench_same_stats(&out->minimal, &out->memsim);
done:
	msim_minreplay_destroy(m);
	msim_sim_destroy(sim);
	free(l.v);
	return rc;
}

static bool
same_stat(const msim_minstat_t *a, const msim_stat_t *b)
{
	return a->cur == b->current && a->peak == b->peak;
}

bool
msim_bench_same_stats(const msim_minreplay_stats_t *a, const msim_stats_t *b)
{
	return same_stat(&a->allocated, &b->allocated_bytes[MSIM_POOL_ALL]) &&
	       same_stat(&a->reserved, &b->reserved_bytes[MSIM_POOL_ALL]) &&
	       same_stat(&a->requested, &b->requested_bytes[MSIM_POOL_ALL]) &&
	       same_stat(&a->active, &b->active_bytes[MSIM_POOL_ALL]) &&
	       same_stat(&a->inactive_split,
			 &b->inactive_split[MSIM_POOL_ALL]) &&
	       same_stat(&a->inactive_split_bytes,
			 &b->inactive_split_bytes[MSIM_POOL_ALL]) &&
	       same_stat(&a->segment, &b->segment[MSIM_POOL_ALL]);
}

int
msim_bench_minimal_mem(const char *trace_path, uint64_t target_requests,
		       uint64_t *requests_out, double *cpu_out, char *why,
		       size_t whylen)
{
	loop_t l = {0};
	msim_minreplay_t *m = NULL;
	uint64_t nreq = 0;
	int rc;
	if ((rc = bench_load(trace_path, true, &l, &nreq, why, whylen)))
		goto done;
	if ((rc = msim_minreplay_new(&m))) {
		snprintf(why, whylen, "%s", msim_strerror(rc));
		goto done;
	}
	uint64_t passes = (target_requests + nreq - 1) / nreq;
	passes = passes ? passes : 1;
	double c0 = cpu_s();
	size_t at = 0;
	for (uint64_t p = 0; p < passes && !rc; p++)
		rc = msim_minreplay_apply(m, l.v, l.n, &at);
	*cpu_out = cpu_s() - c0;
	if (rc) {
		minimal_why(rc, trace_path, at, why, whylen);
		goto done;
	}
	msim_minreplay_stats_t st;
	msim_minreplay_stats(m, &st);
	*requests_out = st.requests;
done:
	msim_minreplay_destroy(m);
	free(l.v);
	return rc;
}

int
msim_bench_minimal_stream(const char *path, uint64_t *requests_out,
			  double *cpu_out, msim_minreplay_stats_t *st_out,
			  char *why, size_t whylen)
{
	double c0 = cpu_s();
	size_t len = strlen(path);
	if (len > 4 && !strcmp(path + len - 4, ".csv") &&
	    !(len > 8 && !strcmp(path + len - 8, ".rmm.csv"))) {
		int rc = msim_mincsv_replay(path, MSIM_MINCSV_BEST, st_out,
					    why, whylen);
		if (rc == 0) {
			*requests_out = st_out->requests;
			*cpu_out = cpu_s() - c0;
		}
		return rc;
	}
	msim_trace_t *t = NULL;
	msim_minreplay_t *m = NULL;
	msim_req_t *v = malloc(4096 * sizeof(*v));
	msim_trace_options_t topt = bench_topt();
	uint64_t base = 0;
	int rc;
	if (!v || (rc = msim_minreplay_new(&m))) {
		rc = MSIM_ENOMEM;
		snprintf(why, whylen, "%s", msim_strerror(rc));
		goto done;
	}
	if ((rc = msim_trace_open(path, &topt, &t, why, whylen)))
		goto done;
	size_t k, at;
	int more;
	do {
		more = msim_trace_fill(t, v, 4096, &k);
		if ((rc = msim_minreplay_apply(m, v, k, &at))) {
			minimal_why(rc, path, base + at, why, whylen);
			goto done;
		}
		base += k;
	} while (more == 1);
	if (more < 0) {
		rc = more;
		snprintf(why, whylen, "%s", msim_trace_errmsg(t));
		goto done;
	}
	msim_minreplay_stats(m, st_out);
	*requests_out = st_out->requests;
	*cpu_out = cpu_s() - c0;
done:
	msim_trace_close(t);
	msim_minreplay_destroy(m);
	free(v);
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
