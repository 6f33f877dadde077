/*
 * Compare: one trace through several policies, each run the job `memsim
 * run` makes of the same setting (lab/job.h: the same input, trace
 * options and time model, and with a database the same stored row under
 * the same setting key), and the data of one overlaid plot (peak
 * reserved, fragmentation, device calls, modelled allocator time; the
 * reserved bytes over the requests).  msim_compare_print() prints it
 * for `memsim compare`.
 *
 *	msim_compare_run() -> msim_compare_print() ->
 *	[msim_compare_plot()] -> msim_compare_clear()
 */
#ifndef MSIM_LAB_COMPARE_H
#define MSIM_LAB_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/job.h"

/* One policy of the comparison and its parameters (NULL: defaults). */
typedef struct msim_compare_pick_s {
	const char *policy;
	const char *conf;
} msim_compare_pick_t;

/*
 * The policies of a comparison, in order, into rows (at most max): those
 * named in list ("a,b,..."), or with list NULL every registered policy.
 * Returns 0, or MSIM_EINVAL with why filled (an unknown policy, more than
 * max, none named) or MSIM_ENOMEM.
 */
int msim_compare_pick_policies(const char *list, msim_compare_pick_t *rows,
			       size_t max, size_t *n_out, char *why,
			       size_t whylen);

/* Gives each row of policy confs[i][0] the parameters confs[i][1].
 * Returns 0, or MSIM_EINVAL with why filled when no row has that
 * policy. */
int msim_compare_pick_confs(msim_compare_pick_t *rows, size_t n,
			    const char *const (*confs)[2], size_t nconfs,
			    char *why, size_t whylen);

typedef struct msim_compare_spec_s {
	const char *trace;               /* a trace file or "model:..." */
	const msim_compare_pick_t *picks; /* in order, at least one */
	size_t npicks;
	uint64_t cap;                    /* bytes; 0: none */
	double fraction;                 /* or as a fraction; 0: none */
	uint64_t capacity;               /* 0: the H200's */
	uint64_t context;                /* msim_job_spec_t.context */
	const msim_timemodel_t *timemodel; /* NULL: the H200's */
	const char *calibration;         /* its name, stored */
	msim_db_t *db;                   /* NULL: nothing stored */
	bool plot;                       /* keep the plot's data */
	bool defaults;                   /* msim_job_spec_t.defaults */
} msim_compare_spec_t;

/* One policy's figures. */
typedef struct msim_compare_row_s {
	const char *policy;
	char canon[512];                 /* canonical parameters */
	msim_summary_t sum;
	msim_stats_t st;
	double time_ms;                  /* modelled device time */
	int64_t run_id;                  /* stored, or -1 */
	/* A snapshot's settings applied (or why not) and the capacity of
	 * its oom record (msim_job_result_t's notes); "" else. */
	char settings[800], capnote[256];
} msim_compare_row_t;

typedef struct msim_compare_s {
	msim_compare_row_t *rows;        /* one a pick */
	size_t n;
	uint64_t cap;                    /* the bytes the device allowed */
	char sum_csv[32], tl_csv[32];    /* the plot's data, or "" */
} msim_compare_t;

/*
 * Runs every pick.  Returns 0 with *out, or an error with err filled and
 * *who the policy at fault (NULL: the database or the plot's data).
 * Clear with msim_compare_clear().
 */
int msim_compare_run(const msim_compare_spec_t *spec, msim_compare_t *out,
		     msim_job_err_t *err, const char **who);

/* The overlaid plot into path (.png, .svg, .pdf).  Returns 0, or an error
 * with why. */
int msim_compare_plot(msim_compare_t *c, const char *plots_dir,
		      const char *gnuplot, const char *path, const char *title,
		      char *why, size_t whylen);

/* Frees the rows and removes the plot's data. */
void msim_compare_clear(msim_compare_t *c);

/* Prints c to stdout: the trace, the cap, a row for each policy, the
 * settings a snapshot replays with, the runs stored in db (its path, or
 * NULL) (memsim compare's table); msim_compare_json() the same as one
 * JSON object, device the --device name or NULL. */
void msim_compare_print(const msim_compare_t *c, const msim_compare_spec_t *spec,
			const char *db);
void msim_compare_json(const msim_compare_t *c, const msim_compare_spec_t *spec,
		       const char *db, const char *device);

#endif
