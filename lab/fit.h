/*
 * Fit: the largest value of one setting of a script (batch size, sequence
 * length) whose recording fits under a cap, by a search over recordings
 * (lab/record.h through the recorder's fork server, lab/recserver.h, or
 * traces recorded already) replayed in this process as jobs (lab/job.h)
 * of a policy (default the exact pytorch one): the value where the line
 * through what two values need meets the cap, bisection when that guess
 * did not halve the range, several values at once with jobs; then, for
 * the winner, the best of the candidate PYTORCH_CUDA_ALLOC_CONF settings,
 * or tune's search (lab/tune.h) when none is given.  The offline version
 * of "catch OOM, halve the batch, retry".  Memory is assumed to grow with
 * the value; when the peaks seen do not, the result says so.
 *
 *	msim_fit_run() -> msim_fit_print() -> msim_fit_clear()
 *
 * Nothing here exits; only the two printers print (to stdout).
 */
#ifndef MSIM_LAB_FIT_H
#define MSIM_LAB_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/record.h"
#include "lab/tune.h"

typedef struct msim_fit_spec_s {
	uint64_t cap;              /* bytes, required */
	/* The device (0: the H200's) and what its CUDA context and
	 * libraries hold of it outside the allocator (lab/job.h's context):
	 * every replay runs under min(cap, capacity - context). */
	uint64_t capacity, context;
	const char *name;          /* the setting varied ("B") */
	long lo, hi;               /* its range, lo <= hi */
	const char *policy;        /* NULL: pytorch */
	/* The traces recorded already, {name} standing for the value
	 * ("gpt-{B}.csv"); NULL: record cmd. */
	const char *pattern;
	/* The command recorded for each value tried, {name} in it, into
	 * dir/NAME-VALUE.csv, with the recorder's options ropt. */
	char *const *cmd;
	int ncmd;
	char *const *ropt;
	int nropt;
	msim_record_opts_t rec;
	const char *dir;
	int jobs;                  /* values recorded at once; 0: 1 */
	/* Record once with the value symbolic (memsim record --symbolic,
	 * traces/symtrace.h; twice in fact, at two values, which must give
	 * the same trace) and instantiate that trace at every value in the
	 * range where it holds; the other values, and all of them when it
	 * does not apply, are recorded one by one, res->symbolic says why. */
	bool symbolic;
	/* The candidate settings tried on the winner; with none, tune's
	 * search on it, stored in tune_db (NULL: no search). */
	const char *const *confs;
	size_t nconf;
	const char *tune_db;
	int tune_jobs;
	/* May be NULL: tune's progress (msim_tune_spec_t.progress). */
	void (*tune_progress)(void *ctx, size_t done, size_t total);
	void *tune_progress_ctx;
	/* May be NULL: told each recording and replay, one line. */
	void (*note)(void *ctx, const char *line);
	void *ctx;
} msim_fit_spec_t;

/* What one replay gave. */
typedef struct msim_fit_point_s {
	int64_t reserved, allocated; /* peaks, bytes */
	bool oom;                    /* it ran out of memory */
	bool failed;                 /* its recording failed: not run */
} msim_fit_point_t;

/* One value tried: what it needs, and how it ran under the cap. */
typedef struct msim_fit_curve_pt_s {
	long value;
	int64_t reserved, allocated; /* peaks without a cap, bytes (0 when
				      * its recording failed) */
	msim_fit_point_t capped;     /* its replay under the cap, or
				      * .failed: its recording failed */
	bool instantiated;           /* from the symbolic trace */
} msim_fit_curve_pt_t;

typedef struct msim_fit_result_s {
	int tries;                 /* recordings (or instantiations)
				    * replayed in the search */
	int failed;                /* recordings that failed: each counted
				    * as not fitting, told to note */
	msim_fit_curve_pt_t *curve; /* every value tried, by value */
	size_t ncurve;
	/* "" or why the answer may be wrong: the peaks seen do not grow
	 * with the value (also told to note) */
	char growth[512];
	/* With spec->symbolic: where the symbolic trace held and how it was
	 * checked, or why it did not apply (also told to note). */
	char symbolic[1024];
	int symbolic_recordings;   /* made with --symbolic (0 to 2) */
	int instantiated;          /* values of the curve instantiated */
	bool fits;                 /* lo fits; the rest is about best */
	long best;                 /* the largest value that fits */
	msim_fit_point_t at_best;  /* its replay with the defaults */
	char trace[4096];          /* its recording */
	msim_fit_point_t *cand;    /* one a spec->confs */
	size_t best_conf;          /* the best candidate, or nconf: none
				    * beats the defaults */
	msim_fit_point_t conf_best; /* its replay (at_best when nconf) */
	/* With no candidates and a tune_db: tune's search on the winner,
	 * or why it failed (tune_err not ""). */
	bool tuned;
	msim_tune_result_t tune;
	char tune_err[2048];
} msim_fit_result_t;

/*
 * Searches (lab/fit.c: the ends of the range, then where the line
 * through what they need meets the cap, bisection after two slow
 * guesses), then weighs the candidates (or tunes).  A recording that
 * fails (the script's error, --timeout) is a failure at its value,
 * counted as not fitting, and the search goes on.  Any long range is
 * safe (no overflow).  Returns 0 with *res (res->fits false when lo
 * already runs out of memory or fails), or an error with why: a trace
 * missing, a recorder that cannot start, memsim interrupted
 * (msim_record_signal()), a replay failed (a bad --alloc-conf, policy or
 * trace).  Clear res with msim_fit_clear().
 */
int msim_fit_run(const msim_fit_spec_t *spec, msim_fit_result_t *res,
		 char *why, size_t whylen);
void msim_fit_clear(msim_fit_result_t *res);

/* Draws res's curve (what each value tried needs, the cap, the answer)
 * into out (.png, .svg, .pdf) with plots/fit.gp.  Returns 0, or an error
 * with why (gnuplot missing, a bad extension, the data not written). */
int msim_fit_plot(const msim_fit_spec_t *spec, const msim_fit_result_t *res,
		  const char *plots_dir, const char *gnuplot, const char *out,
		  char *why, size_t whylen);

/* "NAME=LO..HI" into name (n bytes), lo and hi.  Returns 0, or
 * MSIM_EINVAL with why. */
int msim_fit_parse_vary(const char *text, char *name, size_t n, long *lo,
			long *hi, char *why, size_t whylen);

/* Prints res to stdout: the cap, the device, the curve, the largest value
 * and its margin, the candidates or tune's table (memsim fit's answer);
 * msim_fit_json() the same as one JSON object.  device: its name. */
void msim_fit_print(const msim_fit_spec_t *spec, const msim_fit_result_t *res,
		    const char *device);
void msim_fit_json(const msim_fit_spec_t *spec, const msim_fit_result_t *res,
		   const char *device);

#endif
