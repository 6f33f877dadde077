/*
 * The benchmark of the hot path (request -> policy -> metrics): a trace is
 * read once into memory (timing the reader), then replayed through the
 * engine repeatedly until about a target number of requests (timing the
 * replay alone).  What users run as `memsim bench` and `make bench`.
 */
#ifndef MSIM_LAB_BENCH_H
#define MSIM_LAB_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

#include "lab/minreplay.h"
#include "sim/policy.h"

typedef struct msim_bench_result_s {
	uint64_t trace_requests; /* requests in one pass of the trace */
	double read_s;           /* seconds to read the trace once */
	uint64_t requests;       /* requests replayed */
	double replay_s;         /* seconds of the replay */
	double replay_cpu_s;     /* CPU seconds of the replay */
	long peak_rss_kib;       /* the process's peak resident set */
	int64_t peak_reserved;   /* of the last pass, a sanity figure */
	int64_t peak_allocated;  /* of the last pass, as `memsim run` */
} msim_bench_result_t;

/* Runs the benchmark.  Returns 0, or an error with why filled. */
int msim_bench_run(const char *trace_path, uint64_t target_requests,
		   const msim_policy_ops_t *ops, const msim_params_t *pv,
		   msim_bench_result_t *out, char *why, size_t whylen);

/*
 * The minimal path (lab/minreplay.h) beside memsim: trace_path replayed
 * once through the pytorch policy (default parameters) and through the
 * minimal path.  Returns 0 with out filled and same set when every figure
 * (current and peak) agrees; MSIM_ENOTSUP when the trace uses what the
 * minimal path does not model; another error; why filled on errors.
 */
typedef struct msim_bench_same_s {
	msim_stats_t memsim;
	msim_minreplay_stats_t minimal;
	bool same;
} msim_bench_same_t;
int msim_bench_same(const char *trace_path, msim_bench_same_t *out,
		    char *why, size_t whylen);
bool msim_bench_same_stats(const msim_minreplay_stats_t *a,
			   const msim_stats_t *b);

/* The minimal path on what msim_bench_run() replays (in memory, about
 * target_requests): the requests served and the CPU seconds. */
int msim_bench_minimal_mem(const char *trace_path, uint64_t target_requests,
			   uint64_t *requests_out, double *cpu_out, char *why,
			   size_t whylen);

/* The minimal path streaming path on one thread: a CSV trace (.csv) by
 * its own SIMD parser (lab/mincsv.h), any other format read in batches by
 * msim_trace_fill(); requests served, CPU seconds from open to end, the
 * figures. */
int msim_bench_minimal_stream(const char *path, uint64_t *requests_out,
			      double *cpu_out, msim_minreplay_stats_t *st_out,
			      char *why, size_t whylen);

/* Read speed of one trace format. */
typedef struct msim_bench_format_s {
	const char *format;  /* format name */
	uint64_t file_bytes; /* size of the trace in that format */
	uint64_t requests;   /* requests read */
	double read_s;       /* seconds to read them (open to end) */
} msim_bench_format_t;

/*
 * Writes trace_path in every format memsim can write (files in dir, removed
 * afterwards) and times reading each back as requests.  out has room for
 * one result per format; *n_out is set to the number filled.  Returns 0, or
 * an error with why filled.
 */
int msim_bench_formats(const char *trace_path, const char *dir,
		       msim_bench_format_t *out, size_t *n_out, char *why,
		       size_t whylen);

#endif
