/*
 * `memsim run` of one input, as the library does it: the job of lab/job.h
 * opened, run and stored, then what the run writes besides its figures
 * (the device's segment events, the run as a PyTorch snapshot, the
 * fragmentation curve), and its table (msim_run_print()).  The command
 * (cli/cmd_run.c) reads the options; several inputs on one GPU are
 * lab/together.h's.
 *
 *	msim_run_exec() -> msim_job_result(r.job), [msim_run_segments()],
 *	[msim_run_snapshot()], [msim_run_plot()] -> msim_run_clear()
 */
#ifndef MSIM_LAB_RUN_H
#define MSIM_LAB_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/job.h"
#include "lab/snapout.h"
#include "sim/results.h"

/* What to run and where to keep it. */
typedef struct msim_run_req_s {
	msim_job_spec_t spec; /* the setting (its observe is the run's own
			       * when snapshot is set) */
	const char *db;       /* store the run here (replacing the same
			       * setting), or NULL */
	bool segments;        /* keep the device's event log */
	bool snapshot;        /* follow the run for msim_run_snapshot() */
	bool snapshot_peak;   /* its state when reserved first peaked */
} msim_run_req_t;

/* A finished run. */
typedef struct msim_run_s {
	msim_job_t *job;
	msim_db_t *db;            /* req.db, open; NULL without one */
	msim_snaprec_t *rec;      /* with req.snapshot */
	int64_t run_id;           /* -1: not stored */
	/* Why the row was not stored (part 0: it was, or no db): told after
	 * the figures, which stand. */
	msim_job_err_t store_err;
} msim_run_t;

/*
 * Opens the database, then opens, runs and stores the job.  Returns 0, or
 * an error with err filled (MSIM_JOB_ESTORE: the database could not be
 * opened; the job's own parts else) and r cleared.
 */
int msim_run_exec(const msim_run_req_t *req, msim_run_t *r,
		  msim_job_err_t *err);

/* Writes the device's segment events as CSV (request,action,addr,size)
 * to path.  Returns 0, or an error with why filled. */
int msim_run_segments(const msim_run_t *r, const char *path, char *why,
		      size_t whylen);

/* Writes the run as a PyTorch snapshot pickle (req.snapshot).  Returns 0,
 * or an error with why filled. */
int msim_run_snapshot(const msim_run_t *r, const char *path, char *why,
		      size_t whylen);

/* Draws the stored run's fragmentation curve into out (plots/plot.h).
 * Returns 0, or an error with why filled. */
int msim_run_plot(const msim_run_t *r, const char *out,
		  const char *plots_dir, const char *gnuplot, char *why,
		  size_t whylen);

/* The settings of policy under conf that cannot act (capped: under a cap
 * or a fraction), as msim_explain_warnings() words them, into warn (at
 * most max); none where the policy or conf is bad (the job says so).
 * Returns how many. */
size_t msim_run_warnings(const char *policy, const char *conf, bool capped,
			 char (*warn)[256], size_t max);

/* Closes what msim_run_exec() opened; r may be cleared already. */
void msim_run_clear(msim_run_t *r);

/* Prints r to stdout as `memsim run` does: the setting, the peaks,
 * fragmentation, segments, device calls, notes, the seeding of trace
 * (lab/print.h; trace may be NULL) and, when run_id >= 0, where it was
 * stored (db). */
void msim_run_print(const msim_job_result_t *r, msim_trace_t *trace,
		    int64_t run_id, const char *db);

#endif
