/*
 * Reproduce: every measured run of a database (memsim validate) beside a
 * simulation of the same trace under the same setting, made afresh as a
 * job (lab/job.h): the policy that models the measured allocator (torch
 * mode: pytorch; raw: naive; async: cuda-async), requests only (alloc and
 * free_completed, as validate replays them), the measured run's cap and
 * device capacity.  For torch mode all memory_stats() keys and the device
 * events are compared too.  `memsim report --compare` prints it.
 *
 *	msim_reproduce_run() -> print -> [msim_reproduce_plot()] ->
 *	msim_reproduce_clear()
 */
#ifndef MSIM_LAB_REPRODUCE_H
#define MSIM_LAB_REPRODUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/results.h"

/* The figures set side by side, what every mode measures first. */
#define MSIM_REPRODUCE_NFIG 8
extern const char *const msim_reproduce_figures[MSIM_REPRODUCE_NFIG];

/* One measured run and its simulation. */
typedef struct msim_reproduce_row_s {
	int64_t id;            /* the measured run */
	char *trace, *params;  /* its trace path, canonical parameters */
	char *policy;          /* the simulated policy */
	char mode[16];         /* torch, raw or async */
	uint64_t cap, capacity;
	int64_t meas[MSIM_REPRODUCE_NFIG], sim[MSIM_REPRODUCE_NFIG];
	bool have[MSIM_REPRODUCE_NFIG]; /* measured (raw and async measure
					 * bytes only) */
	int64_t oom_request, sim_oom;   /* measured, simulated; -1: none */
	int stats_total, stats_equal;   /* torch: every memory_stats key */
	int events;            /* 1 equal, 0 differ, -1 not compared */
	bool exact;            /* every figure compared is equal */
} msim_reproduce_row_t;

typedef struct msim_reproduce_s {
	msim_reproduce_row_t *rows;
	size_t n;
	size_t exact;          /* rows reproduced exactly */
} msim_reproduce_t;

/* Simulates every measured run of db, in id order.  Returns 0 with *out
 * (n may be 0), or an error with why: a run no policy models, a setting
 * that does not replay, the database.  Clear with msim_reproduce_clear(). */
int msim_reproduce_run(msim_db_t *db, msim_reproduce_t *out, char *why,
		       size_t whylen);
void msim_reproduce_clear(msim_reproduce_t *r);

/* Plots measured against simulated peak reserved into out (.png, .svg,
 * .pdf) with plots/validate.gp from plots_dir.  Returns 0, or an error
 * with why. */
int msim_reproduce_plot(const msim_reproduce_t *r, const char *plots_dir,
			const char *gnuplot, const char *out, char *why,
			size_t whylen);

#endif
