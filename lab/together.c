/* Several jobs on one GPU (together.h): open, interleave by time, report. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/figures.h"
#include "lab/print.h"
#include "lab/run.h"
#include "lab/together.h"
#include "sim/error.h"
#include "sim/units.h"

typedef struct tg_proc_s {
	msim_job_t *job;
	msim_time_t start; /* time of its first step */
	msim_time_t origin; /* absolute: its trace's first recorded time */
	msim_time_t when;  /* of its next step */
	bool started, live;
} tg_proc_t;

struct msim_together_s {
	msim_gpu_t *gpu;
	tg_proc_t *p;
	size_t n;
	bool absolute, keep_going;
};

static double
tg_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
msim_together_open(const msim_job_spec_t *specs, size_t n, uint64_t capacity,
		   uint64_t context, bool absolute, bool keep_going,
		   msim_together_t **out, size_t *failed_out,
		   msim_job_err_t *err)
{
	*out = NULL;
	*failed_out = 0;
	memset(err, 0, sizeof(*err));
	if (!capacity)
		capacity = MSIM_H200_BYTES;
	if (context && (n > capacity / context ||
			n * context >= capacity)) {
		err->part = MSIM_JOB_EINPUT;
		snprintf(err->msg, sizeof(err->msg), "--context-bytes: %zu "
			 "contexts of %" PRIu64 " bytes fill the capacity (%"
			 PRIu64 " bytes)", n, context, capacity);
		return MSIM_EINVAL;
	}
	msim_together_t *t = calloc(1, sizeof(*t));
	if (t)
		t->p = calloc(n ? n : 1, sizeof(*t->p));
	if (t && t->p)
		t->gpu = msim_gpu_new(capacity - n * context, n);
	if (!t || !t->p || !t->gpu) {
		msim_together_destroy(t);
		err->part = MSIM_JOB_EINPUT;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return MSIM_ENOMEM;
	}
	t->n = n;
	t->absolute = absolute;
	t->keep_going = keep_going;
	for (size_t i = 0; i < n; i++) {
		msim_job_spec_t s = specs[i];
		s.capacity = capacity;
		s.gpu = t->gpu;
		s.process = i;
		s.keep_going = keep_going;
		s.prefetch = false; /* stepped here, one request at a time */
		int rc = msim_job_open(&s, false, &t->p[i].job, err);
		if (rc) {
			*failed_out = i;
			msim_together_destroy(t);
			return rc;
		}
		t->p[i].live = true;
	}
	*out = t;
	return 0;
}

/* Looks at process i's next step: its time, or it is over. */
static int
tg_peek(msim_together_t *t, size_t i)
{
	tg_proc_t *p = &t->p[i];
	msim_time_t when;
	int rc = msim_sim_peek(msim_job_sim(p->job), &when);
	if (rc <= 0) {
		p->live = false;
		return rc;
	}
	if (!p->started) {
		p->started = true;
		p->start = when;
		/* A trace counts from its first request already (msim_
		 * trace_time); absolute time adds that origin back. */
		uint64_t us;
		msim_trace_t *tr = msim_job_trace(p->job);
		if (t->absolute && tr && msim_trace_time_origin(tr, &us))
			p->origin = us * 1000;
	}
	/* Relative: the time since its own first step. */
	p->when = t->absolute ? p->origin + when : when - p->start;
	return 0;
}

/* Process i failed: its error into err. */
static int
tg_fail(msim_together_t *t, size_t i, int rc, size_t *failed_out,
	msim_job_err_t *err)
{
	*failed_out = i;
	err->part = MSIM_JOB_ERUN;
	snprintf(err->msg, sizeof(err->msg), "%s",
		 msim_sim_errmsg(msim_job_sim(t->p[i].job)));
	return rc;
}

int
msim_together_run(msim_together_t *t, size_t *failed_out,
		  msim_job_err_t *err)
{
	memset(err, 0, sizeof(*err));
	double t0 = tg_now_ms();
	int rc;
	for (size_t i = 0; i < t->n; i++)
		if ((rc = tg_peek(t, i)))
			return tg_fail(t, i, rc, failed_out, err);
	for (;;) {
		/* The process due first; equal times: the one given first. */
		size_t best = t->n;
		for (size_t i = 0; i < t->n; i++)
			if (t->p[i].live &&
			    (best == t->n || t->p[i].when < t->p[best].when))
				best = i;
		if (best == t->n)
			break;
		rc = msim_sim_step(msim_job_sim(t->p[best].job));
		if (rc >= 0)
			rc = tg_peek(t, best);
		if (rc < 0)
			return tg_fail(t, best, rc, failed_out, err);
	}
	double wall = tg_now_ms() - t0;
	for (size_t i = 0; i < t->n; i++) {
		if ((rc = msim_job_finish(t->p[i].job, wall, err))) {
			*failed_out = i;
			return rc;
		}
	}
	return 0;
}

size_t
msim_together_n(const msim_together_t *t)
{
	return t->n;
}

msim_job_t *
msim_together_job(msim_together_t *t, size_t i)
{
	return t->p[i].job;
}

const msim_gpu_t *
msim_together_gpu(const msim_together_t *t)
{
	return t->gpu;
}

msim_time_t
msim_together_start(const msim_together_t *t, size_t i)
{
	return t->p[i].start;
}

const char *
msim_together_oom_cause(msim_together_t *t, size_t i)
{
	const msim_job_result_t *r = msim_job_result(t->p[i].job);
	if (r->sum.oom_request < 0)
		return NULL;
	return msim_gpu_last_full_request(t->gpu, i) == r->sum.oom_request
		       ? "gpu" : "process";
}

void
msim_together_destroy(msim_together_t *t)
{
	if (!t)
		return;
	if (t->p)
		for (size_t i = 0; i < t->n; i++)
			msim_job_destroy(t->p[i].job);
	free(t->p);
	msim_gpu_destroy(t->gpu);
	free(t);
}

/* The GPU of several processes, as text. */
void
msim_together_print(msim_together_t *t, uint64_t context,
		    const char *capacity_name, bool absolute)
{
	const msim_gpu_t *gpu = msim_together_gpu(t);
	size_t n = msim_together_n(t);
	msim_gpu_stats_t gs;
	msim_gpu_stats(gpu, &gs);
	char a[32], b[32];
	uint64_t shared = msim_gpu_capacity(gpu);
	uint64_t cap = shared + n * context;
	printf("gpu        %s%s%s (%" PRIu64 " bytes), %zu processes, "
	       "time %s\n", capacity_name ? capacity_name : "",
	       capacity_name ? ", " : "",
	       msim_format_bytes(cap, a, sizeof(a)), cap, n,
	       absolute ? "as recorded"
			   : "relative to each trace's first request");
	if (context)
		printf("contexts   %zu x %s (%" PRIu64 " bytes) outside the "
		       "allocators: they share %s (%" PRIu64 " bytes)\n", n,
		       msim_format_bytes(context, a, sizeof(a)),
		       context, msim_format_bytes(shared, b, sizeof(b)),
		       shared);
	printf("gpu peak   %s (%" PRIu64 " bytes) at process %zu's request %"
	       PRIu64 ":", msim_format_bytes(gs.peak, a, sizeof(a)), gs.peak,
	       gs.peak_proc + 1, gs.peak_request);
	for (size_t i = 0; i < n; i++)
		printf("%s process %zu %s", i ? "," : "", i + 1,
		       msim_format_bytes(msim_gpu_held_at_peak(gpu, i), b,
					 sizeof(b)));
	printf("\n");
	for (size_t i = 0; i < n; i++) {
		const msim_job_result_t *r =
			msim_job_result(msim_together_job(t, i));
		const char *cause = msim_together_oom_cause(t, i);
		if (cause)
			printf("OOM        process %zu at its request %" PRId64
			       ": %s\n", i + 1, r->sum.oom_request,
			       !strcmp(cause, "gpu") ? "the GPU was full"
						     : "its own cap or limit");
	}
	for (size_t i = 0; i < n; i++) {
		msim_job_t *job = msim_together_job(t, i);
		printf("\nprocess    %zu\n", i + 1);
		msim_run_print(msim_job_result(job), msim_job_trace(job), -1, NULL);
		uint64_t nf = msim_gpu_full_failures(gpu, i);
		if (nf)
			printf("gpu full   %" PRIu64 " cudaMalloc%s failed, the "
			       "last at request %" PRId64 "\n", nf,
			       nf == 1 ? "" : "s",
			       msim_gpu_last_full_request(gpu, i));
	}
}

int
msim_together_json(msim_together_t *t, uint64_t context,
		   const char *capacity_name, bool absolute)
{
	msim_figs_t f = {0};
	if (msim_figs_gpu(&f, t, context, capacity_name, absolute))
		return MSIM_ENOMEM;
	printf("{");
	msim_print_json_figs(&f, true);
	msim_figs_clear(&f);
	printf(",\n  \"processes\": [");
	for (size_t i = 0; i < msim_together_n(t); i++) {
		if (msim_figs_process(&f, t, i))
			return MSIM_ENOMEM;
		printf("%s{", i ? ", " : "");
		msim_print_json_figs(&f, true);
		msim_figs_clear(&f);
		printf("\n}");
	}
	printf("]\n}\n");
	return 0;
}
