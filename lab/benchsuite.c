/*
 * The bench suite (lab/benchsuite.h): the measurements in turns, each a
 * median of the runs.  The end-to-end runs and the sweep are children of
 * the memsim program (spec->self), timed by their CPU seconds (user and
 * system, every thread and every worker waited for).
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/benchsuite.h"
#include "policies/registry.h"
#include "sim/error.h"

/* The suite as it runs. */
typedef struct suite_s {
	const msim_bench_suite_spec_t *spec;
	msim_bench_suite_t *out;
	const msim_policy_ops_t *ops;
	msim_params_t pv;
	bool pv_init;
	/* v[k * runs + i]: k = 0 memsim replay, 1 minimal replay, then
	 * memsim run and minimal stream of each FILE; then the sweep's
	 * four figures */
	double *v, *sw;
	char **runjson;
	char *why;
	size_t whylen;
} suite_t;

static int
suite_fail(suite_t *s, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
suite_fail(suite_t *s, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, s->whylen, fmt, ap);
	va_end(ap);
	return rc;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of n values (sorts them). */
static double
median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The figure named key ("reserved_bytes.all.peak") in JSON, or -1. */
static int64_t
json_figure(const char *json, const char *key)
{
	char pat[96];
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	const char *at = strstr(json, pat);
	return at ? strtoll(at + strlen(pat), NULL, 10) : -1;
}

/* Whether the figures `memsim run --json` printed are the minimal
 * path's. */
static bool
same_as_run(const char *json, const msim_minreplay_stats_t *st)
{
	return json_figure(json, "allocated_bytes.all.peak") ==
		       st->allocated.peak &&
	       json_figure(json, "reserved_bytes.all.peak") ==
		       st->reserved.peak &&
	       json_figure(json, "requested_bytes.all.peak") ==
		       st->requested.peak &&
	       json_figure(json, "inactive_split_bytes.all.peak") ==
		       st->inactive_split_bytes.peak &&
	       json_figure(json, "inactive_split.all.peak") ==
		       st->inactive_split.peak &&
	       json_figure(json, "segment.all.peak") == st->segment.peak;
}

/* The memsim program with args in a child: its CPU seconds into *cpu,
 * its wall seconds into *wall (may be NULL), what it printed into *out
 * (malloc'd; may be NULL). */
static int
suite_spawn(suite_t *s, char **args, char **out, double *cpu, double *wall)
{
	fflush(stdout);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	FILE *fp = tmpfile();
	if (!fp)
		return suite_fail(s, MSIM_EIO, "tmpfile: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		fclose(fp);
		return suite_fail(s, MSIM_ENOMEM, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		dup2(fileno(fp), STDOUT_FILENO);
		execv(s->spec->self, args);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		fclose(fp);
		return suite_fail(s, MSIM_EIO, "wait: %s", strerror(errno));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (wall)
		*wall = (double)(t1.tv_sec - t0.tv_sec) +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fclose(fp);
		return suite_fail(s, MSIM_EIO, "`memsim %s` failed (status %d)",
				  args[1], status);
	}
	if (out) {
		long len = ftell(fp);
		char *text = malloc(len > 0 ? (size_t)len + 1 : 1);
		if (!text) {
			fclose(fp);
			return suite_fail(s, MSIM_ENOMEM, "out of memory");
		}
		rewind(fp);
		size_t got = len > 0 ? fread(text, 1, (size_t)len, fp) : 0;
		text[got] = 0;
		free(*out);
		*out = text;
	}
	fclose(fp);
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	return 0;
}

/*
 * The sweep of issue 16 over the trace: max_split_size_mb (5) x
 * garbage_collection_threshold (3) x roundup_power2_divisions (4) under a
 * 20 GiB cap, 60 settings into a fresh database, with jobs workers; and
 * one `memsim run` of the trace under that cap.  CPU seconds of each,
 * and the wall seconds of the sweep with jobs workers and with one (how
 * the workers scale), the one and the other first in turns (round is
 * the round's number); round 0 is a warm-up, not timed.
 */
static int
suite_sweep(suite_t *s, uint64_t round, double *sweep_cpu, double *run_cpu,
	    double *wall_jobs, double *wall_one)
{
	const char *jobs = s->spec->jobs;
	const char *dir = s->spec->tmpdir ? s->spec->tmpdir : getenv("TMPDIR");
	char db[4096];
	snprintf(db, sizeof(db), "%s/memsim-bench-%ld.db",
		 dir && *dir ? dir : "/tmp", (long)getpid());
	remove(db);
	char *sargs[] = {"memsim", "sweep", "--quiet", "--jobs", (char *)jobs,
		"--db", db, "--cap", "20GiB",
		"--grid", "max_split_size_mb=64,128,256,512,1024",
		"--grid", "garbage_collection_threshold=0.5,0.7,0.9",
		"--grid", "roundup_power2_divisions=1,2,4,8",
		(char *)s->spec->trace, NULL};
	double ignored;
	int rc;
	if (round == 0) {
		rc = suite_spawn(s, sargs, NULL, &ignored, &ignored);
		remove(db);
		return rc;
	}
	bool one_first = strcmp(jobs, "1") && round % 2 == 0;
	for (int k = 0; k < 2; k++) {
		if (k == one_first) {
			sargs[4] = (char *)jobs;
			rc = suite_spawn(s, sargs, NULL, sweep_cpu, wall_jobs);
		} else if (strcmp(jobs, "1")) {
			sargs[4] = "1";
			rc = suite_spawn(s, sargs, NULL, &ignored, wall_one);
		} else {
			continue;
		}
		remove(db);
		if (rc)
			return rc;
	}
	if (!strcmp(jobs, "1"))
		*wall_one = *wall_jobs;
	char *rargs[] = {"memsim", "run", "--json", "--cap", "20GiB",
		(char *)s->spec->trace, NULL};
	return suite_spawn(s, rargs, NULL, run_cpu, NULL);
}

/* Whether the minimal path replays the trace with the policy's figures;
 * why not into out->minimal_why. */
static int
suite_minimal(suite_t *s, bool defaults)
{
	msim_bench_suite_t *o = s->out;
	msim_bench_same_t same;
	int rc;
	o->minimal = defaults;
	if (!defaults) {
		snprintf(o->minimal_why, sizeof(o->minimal_why), "the minimal "
			 "path models pytorch with default parameters only");
	} else if ((rc = msim_bench_same(s->spec->trace, &same, o->minimal_why,
					 sizeof(o->minimal_why)))) {
		if (rc != MSIM_ENOTSUP)
			return suite_fail(s, rc, "%s", o->minimal_why);
		o->minimal = false;
	} else if (!same.same) {
		snprintf(o->minimal_why, sizeof(o->minimal_why), "%s: the "
			 "minimal path's figures differ from pytorch's",
			 s->spec->trace);
		o->minimal = false;
	}
	return 0;
}

/* FILE f end to end in run i: `memsim run --json`, then the minimal path
 * streaming it while it still gives run's figures. */
static int
suite_file(suite_t *s, size_t f, uint64_t i)
{
	const msim_bench_suite_spec_t *sp = s->spec;
	msim_bench_file_t *bf = &s->out->files[f];
	uint64_t runs = sp->runs;
	char *args[] = {"memsim", "run", "--json", "--policy",
		(char *)s->ops->name, "--alloc-conf",
		(char *)(sp->conf ? sp->conf : ""), (char *)sp->files[f], NULL};
	int rc = suite_spawn(s, args, &s->runjson[f],
			     &s->v[(2 + 2 * f) * runs + i], NULL);
	if (rc || !bf->same)
		return rc;
	rc = msim_bench_minimal_stream(sp->files[f], &bf->requests,
				       &s->v[(3 + 2 * f) * runs + i], &bf->st,
				       bf->why, sizeof(bf->why));
	if (rc == MSIM_ENOTSUP)
		bf->same = false;
	else if (rc)
		return suite_fail(s, rc, "%s", bf->why);
	else if (!same_as_run(s->runjson[f], &bf->st)) {
		snprintf(bf->why, sizeof(bf->why), "%s: the minimal path's "
			 "figures differ from `memsim run`'s", sp->files[f]);
		bf->same = false;
	}
	return 0;
}

/* Run i of every measurement. */
static int
suite_round(suite_t *s, uint64_t i)
{
	const msim_bench_suite_spec_t *sp = s->spec;
	msim_bench_suite_t *o = s->out;
	uint64_t runs = sp->runs;
	int rc = msim_bench_run(sp->trace, sp->requests, s->ops, &s->pv,
				&o->r, s->why, s->whylen);
	if (rc)
		return rc;
	s->v[i] = o->r.replay_cpu_s;
	if (o->minimal &&
	    (rc = msim_bench_minimal_mem(sp->trace, sp->requests,
					 &o->minimal_requests, &s->v[runs + i],
					 s->why, s->whylen)))
		return rc;
	for (size_t f = 0; f < sp->nfiles; f++)
		if ((rc = suite_file(s, f, i)))
			return rc;
	if (sp->sweep && i == 0 &&
	    (rc = suite_sweep(s, 0, NULL, NULL, NULL, NULL)))
		return rc;
	if (sp->sweep)
		rc = suite_sweep(s, i + 1, &s->sw[i], &s->sw[runs + i],
				 &s->sw[2 * runs + i], &s->sw[3 * runs + i]);
	return rc;
}

/* The medians, and each FILE's reason when not the minimal path's. */
static void
suite_medians(suite_t *s)
{
	const msim_bench_suite_spec_t *sp = s->spec;
	msim_bench_suite_t *o = s->out;
	uint64_t runs = sp->runs;
	o->replay_cpu_s = median(s->v, runs);
	o->minimal_cpu_s = median(s->v + runs, runs);
	for (size_t f = 0; f < sp->nfiles; f++) {
		msim_bench_file_t *bf = &o->files[f];
		bf->run_cpu_s = median(s->v + (2 + 2 * f) * runs, runs);
		if (bf->same)
			bf->minimal_cpu_s = median(s->v + (3 + 2 * f) * runs,
						   runs);
		else if (!bf->why[0])
			snprintf(bf->why, sizeof(bf->why), "%s",
				 o->minimal_why);
	}
	if (sp->sweep) {
		o->sweep_cpu_s = median(s->sw, runs);
		o->run_cpu_s = median(s->sw + runs, runs);
		o->wall_jobs_s = median(s->sw + 2 * runs, runs);
		o->wall_one_s = median(s->sw + 3 * runs, runs);
	}
}

/* The policy, its parameters and the arrays. */
static int
suite_open(suite_t *s)
{
	const msim_bench_suite_spec_t *sp = s->spec;
	const char *conf = sp->conf ? sp->conf : "";
	if (!(s->ops = msim_policy_find(sp->policy)))
		return suite_fail(s, MSIM_EINVAL, "--policy: unknown policy "
				  "'%s'", sp->policy);
	s->out->policy = s->ops->name;
	if (msim_params_init(&s->pv, s->ops->params))
		return suite_fail(s, MSIM_ENOMEM, "out of memory");
	s->pv_init = true;
	if (msim_params_parse(&s->pv, conf))
		return suite_fail(s, MSIM_EINVAL, "--alloc-conf: %s",
				  s->pv.errmsg);
	size_t nf = sp->nfiles;
	s->v = calloc(sp->runs * (6 + 2 * nf) + 1, sizeof(*s->v));
	s->runjson = calloc(nf + 1, sizeof(*s->runjson));
	s->out->files = calloc(nf + 1, sizeof(*s->out->files));
	if (!s->v || !s->runjson || !s->out->files)
		return suite_fail(s, MSIM_ENOMEM, "out of memory");
	/* sweep CPU, run CPU, sweep wall with --jobs, sweep wall with one */
	s->sw = s->v + sp->runs * (2 + 2 * nf);
	bool defaults = !strcmp(s->ops->name, MSIM_POLICY_PYTORCH) && !*conf;
	for (size_t f = 0; f < nf; f++)
		s->out->files[f].same = defaults; /* each FILE judged apart */
	return suite_minimal(s, defaults);
}

int
msim_bench_suite_run(const msim_bench_suite_spec_t *spec,
		     msim_bench_suite_t *out, char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	suite_t s = {.spec = spec, .out = out, .why = why, .whylen = whylen};
	int rc = suite_open(&s);
	for (uint64_t i = 0; !rc && i < spec->runs; i++)
		rc = suite_round(&s, i);
	if (!rc)
		suite_medians(&s);
	free(s.v);
	for (size_t f = 0; s.runjson && f < spec->nfiles; f++)
		free(s.runjson[f]);
	free(s.runjson);
	if (s.pv_init)
		msim_params_clear(&s.pv);
	if (rc)
		msim_bench_suite_clear(out);
	return rc;
}

void
msim_bench_suite_clear(msim_bench_suite_t *out)
{
	free(out->files);
	out->files = NULL;
}
