/*
 * Runs replayed from several threads at once (lib/memsim.h, "Threads"):
 * each thread's figures are those of the same run replayed alone, and no
 * call changes process-wide state: a caller's GSL error handler, checked
 * by another thread all along, is never swapped.  Closing twice from the
 * threads is harmless.  Built a second time with -fsanitize=thread by
 * .ci/run (its own build of the library), so a data race in the library
 * fails it there.  Exit 0, 1 with a line per failure.
 */
#include <config.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "memsim.h"

enum { NTHREADS = 4, NREPLAYS = 8 };

static const char *const policies[] = {"pytorch", "bfc", "buddy"};
enum { NPOL = sizeof(policies) / sizeof(policies[0]) };

static char trace[4096], calib[4096];
static int64_t want[NPOL][3];
static atomic_int fails, done, swapped;

static const char *const keys[3] = {"requests", "reserved_bytes.all.peak",
				    "allocated_bytes.all.peak"};

static void
caller_handler(const char *reason, const char *file, int line, int err)
{
	(void)reason, (void)file, (void)line, (void)err;
}

/* Replays policy k; its three figures in v. */
static int
replay(int k, int64_t v[3])
{
	memsim_run_t *r;
	int rc = memsim_open(&r, trace);
	if (!rc)
		rc = memsim_set_policy(r, policies[k], NULL);
	if (!rc)
		rc = memsim_set_option(r, "calibration", calib);
	if (!rc)
		rc = memsim_replay(r);
	for (int j = 0; !rc && j < 3; j++)
		rc = memsim_get_int(r, keys[j], &v[j]);
	if (rc)
		fprintf(stderr, "api_threads: %s: %s\n", policies[k],
			memsim_errmsg(r));
	memsim_close(r);
	memsim_close(r); /* harmless */
	return rc;
}

static void *
worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int n = 0; n < NREPLAYS; n++) {
		int k = (t + n) % NPOL;
		int64_t v[3];
		if (replay(k, v)) {
			atomic_fetch_add(&fails, 1);
			continue;
		}
		for (int j = 0; j < 3; j++)
			if (v[j] != want[k][j]) {
				fprintf(stderr, "api_threads: thread %d, %s: "
					"%s %lld, alone %lld\n", t,
					policies[k], keys[j], (long long)v[j],
					(long long)want[k][j]);
				atomic_fetch_add(&fails, 1);
			}
	}
	atomic_fetch_add(&done, 1);
	return NULL;
}

/* Sets the caller's handler again and again while the workers run: each
 * time, the one it replaces must be the caller's own. */
static void *
watcher(void *arg)
{
	(void)arg;
	while (atomic_load(&done) < NTHREADS)
		if (gsl_set_error_handler(caller_handler) != caller_handler)
			atomic_fetch_add(&swapped, 1);
	return NULL;
}

int
main(void)
{
	const char *d = getenv("MSIM_TESTDATA");
	d = d ? d : "tests/data";
	snprintf(trace, sizeof(trace), "%s/traces/gpt2_varlen.csv", d);
	snprintf(calib, sizeof(calib), "%s/cuda_latency_h200.csv", d);
	gsl_set_error_handler(caller_handler);
	for (int k = 0; k < NPOL; k++)
		if (replay(k, want[k]))
			return 1;
	if (gsl_set_error_handler(caller_handler) != caller_handler) {
		fprintf(stderr, "api_threads: a replay replaced the caller's "
			"GSL error handler\n");
		return 1;
	}
	pthread_t th[NTHREADS], w;
	if (pthread_create(&w, NULL, watcher, NULL))
		return 1;
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t))
			return 1;
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	pthread_join(w, NULL);
	if (atomic_load(&swapped)) {
		fprintf(stderr, "api_threads: the GSL error handler was "
			"swapped %d times during the replays\n",
			atomic_load(&swapped));
		atomic_fetch_add(&fails, 1);
	}
	return atomic_load(&fails) ? 1 : 0;
}
