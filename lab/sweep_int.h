/*
 * For the files of a sweep (lab/sweep.c: the plan; lab/sweep_pool.c: the
 * worker pool; lab/sweep_cache.c: the traces read once): the sweep
 * object and what they share.  Users include lab/sweep.h only.
 */
#ifndef MSIM_LAB_SWEEP_INT_H
#define MSIM_LAB_SWEEP_INT_H

#include <pthread.h>
#include <stdbool.h>

#include "lab/sweep.h"
#include "traces/gen_model.h"
#include "traces/trace.h"

struct msim_sweep_s {
	msim_setting_t *v; /* every setting of the sweep, de-duplicated */
	size_t n, cap;
	size_t *shard;     /* indexes of this shard's settings in v */
	size_t nshard;
	char **traces, **hashes; /* owned copies */
	msim_model_cfg_t **models; /* parsed model specs; NULL: a file */
	size_t ntraces;
	uint64_t capacity;
	char *spec_text;
	char spec_hash[17];
	char note[160];    /* msim_sweep_note() */
	msim_sweep_row_t row; /* the sweeps table's row */
	msim_trace_cache_t *caches; /* by trace, while the sweep runs */
	/* The plan's reading of the traces into caches (spec->preload),
	 * joined by msim_sweep_exec() or msim_sweep_destroy(). */
	pthread_t preload;
	bool preloading;
	char **preload_paths; /* NULL: a model spec */
	size_t npreload;
};

/* Monotonic milliseconds. */
double msim_sweep_now_ms(void);

/*
 * Runs the npending settings of sw's shard listed in pending (indexes
 * into it) through o->jobs worker processes (this process where o->jobs
 * <= 0) and counts them into res (res->skipped, ->retried and ->sweep_id
 * as msim_sweep_exec() found them).  early: the database is new and is
 * made by this process while the workers replay (sw->row); *db is this
 * process's connection, left open for the caller to close last (its close
 * checkpoints what the workers left in the WAL).  Returns 0 or an error,
 * why said.
 */
int msim_sweep_pool_run(msim_sweep_t *sw, const msim_sweep_opts_t *o,
			const size_t *pending, size_t npending, bool early,
			msim_sweep_result_t *res, msim_db_t **db, char *why,
			size_t whylen);

/* lab/sweep_cache.c.  Starts reading the spec's trace files on a thread
 * (spec->preload: every setting runs); nothing happens where memory or a
 * thread is short. */
void msim_sweep_preload_start(msim_sweep_t *sw,
			      const msim_sweep_spec_t *spec);
/* Waits for that reading, if any, and forgets the paths it read. */
void msim_sweep_preload_join(msim_sweep_t *sw);
/* Reads each trace file that two or more of the n settings listed (all
 * of the shard's where list is NULL) replay as it is. */
void msim_sweep_load(msim_sweep_t *sw, const size_t *list, size_t n);
/* The pending settings that replay a trace read use it; a trace fewer
 * than two of them replay is forgotten. */
void msim_sweep_share(msim_sweep_t *sw, const size_t *pending,
		      size_t npending);
/* Forgets what msim_sweep_share() read. */
void msim_sweep_unshare(msim_sweep_t *sw);

#endif
