/*
 * The bench suite of `memsim bench`: the hot path (lab/bench.h) measured
 * in turns with the minimal path beside it, each large FILE end to end
 * (the memsim program's `run --json FILE`, a child whose CPU seconds are
 * counted, against the minimal path streaming FILE), and optionally a
 * 60-setting sweep against one `memsim run`.  Every figure is the median
 * of the runs.  Nothing here prints or exits.
 */
#ifndef MSIM_LAB_BENCHSUITE_H
#define MSIM_LAB_BENCHSUITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/bench.h"

typedef struct msim_bench_suite_spec_s {
	const char *trace;        /* replayed in memory */
	uint64_t requests;        /* about this many a run */
	uint64_t runs;            /* of each measurement, >= 1 */
	const char *policy;       /* required */
	const char *conf;         /* its parameters; NULL or "" */
	const char *const *files; /* end to end, each */
	size_t nfiles;
	bool sweep;               /* also the 60-setting sweep */
	const char *jobs;         /* its workers, as --jobs takes them */
	/* The memsim program the end-to-end runs and the sweep run as
	 * children ("/proc/self/exe" from the program itself). */
	const char *self;
	const char *tmpdir;       /* the sweep's database; NULL: $TMPDIR */
} msim_bench_suite_spec_t;

/* One FILE end to end. */
typedef struct msim_bench_file_s {
	double run_cpu_s;         /* `memsim run --json FILE`, median */
	bool same;                /* the minimal path gave run's figures */
	uint64_t requests;        /* the minimal path's, when same */
	double minimal_cpu_s;     /* median, when same */
	msim_minreplay_stats_t st; /* the minimal path's figures */
	char why[1024];           /* why not same */
} msim_bench_file_t;

typedef struct msim_bench_suite_s {
	const char *policy;       /* the policy's name */
	msim_bench_result_t r;    /* the last run of the hot path */
	double replay_cpu_s;      /* median */
	bool minimal;             /* the minimal path's figures are the
				   * policy's: minimal_cpu_s is set */
	uint64_t minimal_requests;
	double minimal_cpu_s;     /* median */
	char minimal_why[1024];   /* why not minimal */
	msim_bench_file_t *files; /* one a spec FILE */
	/* With spec.sweep, medians: the sweep's CPU seconds and one run's,
	 * the sweep's wall seconds with spec.jobs workers and with one. */
	double sweep_cpu_s, run_cpu_s, wall_jobs_s, wall_one_s;
} msim_bench_suite_t;

/* Runs the suite.  Returns 0 with *out, or an error with why (a policy
 * or parameters refused, a trace, a child that failed).  Clear with
 * msim_bench_suite_clear(). */
int msim_bench_suite_run(const msim_bench_suite_spec_t *spec,
			 msim_bench_suite_t *out, char *why, size_t whylen);
void msim_bench_suite_clear(msim_bench_suite_t *out);

#endif
