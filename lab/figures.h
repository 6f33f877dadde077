/*
 * The figures of a run as one list of named values, in the order of
 * `memsim run --json`: what `memsim run --json` prints and what the
 * public API (lib/memsim.h) hands out are built here once, so their names
 * cannot drift.  Nothing here prints.
 *
 *	msim_figs_job() -> [msim_figs_int(..., "run_id", ...)] -> read
 *	msim_figs_t.v -> msim_figs_clear()
 */
#ifndef MSIM_LAB_FIGURES_H
#define MSIM_LAB_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/job.h"
#include "traces/trace.h"

/* The kinds of figure (the values of memsim.h's MEMSIM_INT ...). */
enum {
	MSIM_FIG_INT = 1,
	MSIM_FIG_REAL = 2,
	MSIM_FIG_TEXT = 3,
	MSIM_FIG_BOOL = 4, /* i: 0 or 1 */
	/* An empty JSON list (t "[]") or object (t "{}"), named by its
	 * dotted path, that a nested printer (msim_print_json_tree()) shows
	 * so; memsim.h has no such kind (msim_figs_drop_empty()). */
	MSIM_FIG_EMPTY = 5,
};

typedef struct msim_fig_s {
	char *name;         /* owned */
	int kind;           /* MSIM_FIG_* */
	int64_t i;          /* INT, BOOL */
	double d;           /* REAL */
	/* TEXT: the text; REAL: the number as written in JSON ("%.6f",
	 * "%.3f", or as stored).  Owned by the list. */
	char *t;
	bool null;          /* TEXT: none (t ""): JSON null */
} msim_fig_t;

typedef struct msim_figs_s {
	msim_fig_t *v;
	size_t n, cap;
} msim_figs_t;

/*
 * Appends the figures of a finished job (after msim_job_run()): the
 * columns of the runs row it would store shown before the statistics
 * (sim/results.h's MSIM_RUN_COLUMNS: trace, trace_hash, policy, params,
 * cap_bytes, requests, strategy), [the input's meta], the keys of
 * torch.cuda.memory_stats(), the columns shown after them (memsim_version,
 * kind, trace_format, addresses, oom_request, frag_at_peak, ..., wall_ms,
 * capacity_bytes, setting_key), addr_same, addr_other,
 * modelled_device_ms, [snapshot_state], [settings_note], [capacity_note], [the seeding of
 * msim_figs_seed()].  Returns 0 or MSIM_ENOMEM.
 */
int msim_figs_job(msim_figs_t *f, msim_job_t *job);

/*
 * Appends what the start of a partial history of t was seeded with, what
 * was skipped and whether a snapshot had no trace events (seeded_from_frees
 * ... no_trace_events); unless always, only when there is any of it.
 * Returns 0 or MSIM_ENOMEM.
 */
int msim_figs_seed(msim_figs_t *f, msim_trace_t *t, bool always);

/*
 * Appends the figures of run id as stored in db (sim/results.h's read
 * calls), in the order of msim_figs_job(): the columns shown before the
 * statistics, the statistics stored, the columns shown after them, then
 * created, each run_meta entry (an INT or REAL when its text is a number:
 * modelled_device_ms, a generator's counts; else TEXT) and run_id.
 * Returns 0, MSIM_ENOTFOUND, MSIM_ENOMEM or MSIM_EDB.
 */
struct msim_db_s;
int msim_figs_stored(msim_figs_t *f, struct msim_db_s *db, int64_t id);

/*
 * Appends the figures of processes on one GPU (lab/together.h) that
 * `memsim run --json` of several inputs prints first: capacity_bytes
 * (the GPU's, contexts included), context_bytes, shared_bytes,
 * [capacity_name], time ("absolute" or "relative"), gpu_peak_bytes,
 * gpu_peak_process (1-based), gpu_peak_request, gpu_bytes_now.  Returns 0
 * or MSIM_ENOMEM.
 */
struct msim_together_s;
int msim_figs_gpu(msim_figs_t *f, struct msim_together_s *t,
		  uint64_t context, const char *capacity_name, bool absolute);
/*
 * Appends the figures of process i of t: process (1-based), oom_cause
^ * ("gpu", "process", or null), gpu_full_failures, held_at_gpu_peak, start_ns,
 * then msim_figs_job() of its job.  Returns 0 or MSIM_ENOMEM.
 */
int msim_figs_process(msim_figs_t *f, struct msim_together_s *t, size_t i);
/* Appends the statistics st, as torch.cuda.memory_stats() names them, in
 * its order.  Returns 0 or MSIM_ENOMEM. */
int msim_figs_stats(msim_figs_t *f, const msim_stats_t *st);
/* Whether t is a snapshot without any trace event (read to its end). */
bool msim_figs_no_events(msim_trace_t *t);

/* Appends one figure (text copied), or sets it if there already.
 * Returns 0 or MSIM_ENOMEM. */
int msim_figs_int(msim_figs_t *f, const char *name, int64_t v);

/* Append one figure: a text (NULL: JSON null), a number written with prec
 * decimals (or as as_written says it, when not NULL), a boolean.  Return
 * 0 or MSIM_ENOMEM. */
int msim_figs_text(msim_figs_t *f, const char *name, const char *v);
int msim_figs_real(msim_figs_t *f, const char *name, double v, int prec,
		   const char *as_written);
int msim_figs_bool(msim_figs_t *f, const char *name, bool v);
/* Appends an empty list, or with object an empty object (MSIM_FIG_EMPTY).
 * Returns 0 or MSIM_ENOMEM. */
int msim_figs_empty(msim_figs_t *f, const char *name, bool object);
/* Removes the MSIM_FIG_EMPTY figures of f, keeping the others' order. */
void msim_figs_drop_empty(msim_figs_t *f);

/* The figure called name, or NULL. */
const msim_fig_t *msim_figs_find(const msim_figs_t *f, const char *name);

void msim_figs_clear(msim_figs_t *f);

#endif
