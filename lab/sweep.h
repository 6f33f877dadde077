/*
 * Sweeps: many settings run over one or more traces and policies, each
 * result stored once in the results database.
 *
 * A setting is a generic list of key=value pairs.  The sweep routes each
 * key to what understands it: "policy", "cap" and "addresses" to the run
 * itself, anything else to the policy's parameter table (the keys of
 * PYTORCH_CUDA_ALLOC_CONF), the strategies (dtype, checkpoint) and the
 * keys of a model spec (batch, seq, layers, ...) to the generator when the
 * trace is a model spec ("model:arch=gpt2,..."; traces/model_spec.h), and
 * dtype to the dtype transform (traces/xform.h) when it is a recording.  Settings come from a grid
 * (the cartesian product of --grid key=v1,v2 lists), a file (one setting a
 * line, in PYTORCH_CUDA_ALLOC_CONF syntax), or a seeded random search.
 *
 * Planning expands the settings in a fixed order, checks every one (an
 * unknown key or a bad value fails before any work), computes its setting
 * key (msim_db_setting_key()) and drops duplicates; `--shard I/N` then
 * keeps every N-th setting, so shards are disjoint, cover the sweep and do
 * not depend on the machine.  Execution skips settings whose key is
 * already in the database (unless forced), runs the others in worker
 * processes (fork; each opens the database itself and stores each result
 * in its own transaction), and so resumes after a kill where it stopped.
 *
 *	msim_sweep_plan() -> msim_sweep_exec() -> msim_sweep_destroy()
 */
#ifndef MSIM_LAB_SWEEP_H
#define MSIM_LAB_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lab/input.h"
#include "lab/job.h"
#include "sim/engine.h"
#include "sim/results.h"
#include "sim/types.h"
#include "traces/gen.h"
#include "traces/trace.h"
#include "traces/xform.h"

/* One key=value pair of a setting. */
typedef struct msim_kv_s {
	char *key;
	char *value;
} msim_kv_t;

/* One setting, resolved. */
typedef struct msim_setting_s {
	/* What runs: the job of the setting (lab/job.h), made once by the
	 * plan, its strings the setting's or the sweep's (spec.conf is
	 * params; spec.cache the trace read once while the sweep runs). */
	msim_job_spec_t spec;
	/* The plan's own: the strings spec points to that the plan made, and
	 * what it found.  Read the setting's trace, policy, model shape,
	 * strategies, cap and addresses from spec. */
	char *model_spec_own;   /* spec.model_spec: the canonical shape of a
				 * generated trace (the setting's own keys
				 * applied); NULL: a file */
	char *strategy_own;     /* spec.strategy: canonical strategies; NULL:
				 * none */
	char *hash_own;         /* the hash of model_spec (spec.trace_hash) */
	uint64_t cap_bytes;     /* the allowed bytes the run will have
				 * (msim_cap_allowed()) */
	size_t nkv;
	msim_kv_t *kv;          /* the policy's parameters, as given */
	char *conf;             /* kv as "key:value,...", for people */
	char *params;           /* canonical parameters */
	char *key;              /* msim_job_setting_key() */
} msim_setting_t;

/* What to sweep.  Empty lists take the defaults noted. */
typedef struct msim_sweep_spec_s {
	const char *const *traces;   /* at least one */
	size_t ntraces;
	/* NULL, or one a trace (each NULL or not): what made a recording
	 * ("batch=2,checkpoint=sqrt", memsim sweep -- COMMAND), stored as
	 * the strategy "record:batch=2,checkpoint=sqrt" (after a transform's,
	 * ";" between) and so part of the setting key. */
	const char *const *labels;
	/* NULL, or one a trace (each NULL or not): how a recording was made
	 * when not recorded (msim_recsweep_origins()), stored with each of
	 * its runs as the run_meta trace_origin; not part of the setting
	 * key (an instantiated trace is the recording's bytes). */
	const char *const *origins;
	const char *const *policies; /* default: pytorch */
	size_t npolicies;
	const uint64_t *caps;        /* default: no cap */
	size_t ncaps;
	const char *const *grid;     /* "key=v1,v2,..." each */
	size_t ngrid;
	const char *settings_file;   /* NULL: none */
	size_t random;               /* > 0: draw this many settings */
	uint64_t seed;               /* of the random search */
	const char *addresses;       /* NULL: "model" */
	uint64_t capacity;           /* 0: the H200's */
	int shard_index, shard_count; /* 1-based; 0/0: everything */
	/* Every setting will run (a new database, or --force): the trace
	 * files start being read (msim_sweep_exec()'s cache) while the plan
	 * checks and hashes them. */
	bool preload;
} msim_sweep_spec_t;

typedef struct msim_sweep_s msim_sweep_t;

/* Expands and checks spec.  Returns 0, or an error with why naming the
 * setting, the key and the reason. */
int msim_sweep_plan(const msim_sweep_spec_t *spec, msim_sweep_t **out,
		    char *why, size_t whylen);
void msim_sweep_destroy(msim_sweep_t *sw);

/* A line for the user about the plan ("--random N: the grid holds M
 * settings, taking each once"), or "". */
const char *msim_sweep_note(const msim_sweep_t *sw);

/* Settings of the whole sweep (every shard). */
size_t msim_sweep_total(const msim_sweep_t *sw);

/* Settings of this shard, and the i-th of them. */
size_t msim_sweep_count(const msim_sweep_t *sw);
const msim_setting_t *msim_sweep_setting(const msim_sweep_t *sw, size_t i);

/* The sweep as stored in the sweeps table. */
const char *msim_sweep_spec_text(const msim_sweep_t *sw);
const char *msim_sweep_spec_hash(const msim_sweep_t *sw);

/* How a sweep runs. */
typedef struct msim_sweep_opts_s {
	const char *db_path;
	const char *kind;  /* sweeps.kind: NULL = "sweep" */
	int jobs;          /* worker processes (a setting that crashes one
			    * fails alone); <= 0: in this process */
	int force;         /* run and replace settings already stored */
	/* Called now and then in the calling process (may be NULL). */
	void (*progress)(void *ctx, size_t done, size_t total);
	/* Called, in the worker, for a setting that failed (may be NULL). */
	void (*error)(void *ctx, const msim_setting_t *s, const char *msg);
	void *ctx;
	double progress_ms; /* between progress calls; 0: 250 */
} msim_sweep_opts_t;

/* What a sweep did. */
typedef struct msim_sweep_result_s {
	int64_t sweep_id;
	size_t total;   /* settings of this shard */
	size_t skipped; /* already in the database */
	size_t ran;     /* run and stored now */
	size_t failed;  /* a trace error or a worker that died */
	size_t retried; /* pending settings that a run of this sweep before
			 * stored as failed: run again */
	double wall_ms;
} msim_sweep_result_t;

/*
 * Runs the shard's settings into the database.  Returns 0 (failed
 * settings are counted, not fatal), or an error with why (the database
 * cannot be opened, no process can be started).
 */
int msim_sweep_exec(msim_sweep_t *sw, const msim_sweep_opts_t *opts,
		    msim_sweep_result_t *res, char *why, size_t whylen);

/*
 * Runs one setting and stores it in db (mode: MSIM_DB_SKIP or _REPLACE;
 * NULL db stores nothing).  sum and st may be NULL.  Returns 0 with the
 * run's id (-1 without db) and whether it was already stored, or an error
 * with why.
 */
int msim_setting_run(const msim_setting_t *s, uint64_t capacity,
		     msim_db_t *db, int mode, int64_t sweep_id,
		     int64_t *run_id_out, int *existed_out,
		     msim_summary_t *sum, msim_stats_t *st, char *why,
		     size_t whylen);

#endif
