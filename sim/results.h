/*
 * The results store: one SQLite file holding runs (trace, policy, canonical
 * parameters, software version), their statistics, a down-sampled timeline
 * and the segment events.  Every run is written in one transaction, so a
 * killed writer leaves whole runs or none; WAL and a busy timeout let
 * several processes write one database.  The schema is documented in
 * docs/guide.md ("Results database") and versioned in the table meta.
 */
#ifndef MSIM_SIM_RESULTS_H
#define MSIM_SIM_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/device.h"
#include "sim/engine.h"
#include "sim/metrics.h"
#include "sim/types.h"

#define MSIM_DB_SCHEMA_VERSION 7

typedef struct msim_db_s msim_db_t;

/* What identifies a run and what it measured besides the statistics. */
typedef struct msim_run_info_s {
	const char *kind;         /* "simulated" or "measured" */
	const char *trace_path;
	const char *trace_hash;   /* hex */
	const char *trace_format;
	const char *policy;
	const char *params;       /* canonical */
	uint64_t cap_bytes;       /* 0 = none */
	const char *addresses;    /* "model" or "trace" */
	/* The strategies of a generated or transformed trace, canonical
	 * ("dtype=bf16-amp,checkpoint=every:2", "transform:dtype=bf16-amp"),
	 * and what made a sweep's recording ("record:batch=2,checkpoint=sqrt",
	 * after a transform's: "transform:dtype=bf16-amp;record:batch=2");
	 * NULL or "" for a recording replayed as it is. */
	const char *strategy;
	/* Which rows of the trace were replayed, when not the default
	 * (free_requested applied apart): "requests" (alloc and
	 * free_completed only), "recording" (hidden empty_cache() calls
	 * too); NULL or "" for the default.  Part of the setting key. */
	const char *replay;
	/* Snapshots: the device_traces index replayed when given and not
	 * 0 (--device N); 0 for the default.  Part of the setting key, so
	 * the devices of one file are stored apart. */
	uint32_t device;
	double wall_ms;
	uint64_t capacity_bytes;  /* device memory; 0 = unknown */
	/* Bytes of it a CUDA context held outside the allocator (run
	 * --context-bytes); 0: none.  Part of the setting key. */
	uint64_t context_bytes;
	int64_t sweep_id;         /* > 0: record the run as the sweep's */
	/* More about the run as key, value, key, value, ..., NULL (may be
	 * NULL): the device and versions of a measured run, the modelled
	 * device time.  Stored in run_meta. */
	const char *const *meta;
	/* The policy's blocks at peak reserved (may be NULL): peak_blocks. */
	const msim_block_t *peak_blocks;
	size_t npeak_blocks;
} msim_run_info_t;

/* What msim_db_store_run_mode() does with a setting already stored. */
enum {
	MSIM_DB_INSERT = 0, /* store without a setting key (duplicates kept) */
	MSIM_DB_SKIP,       /* keep the stored run, store nothing */
	MSIM_DB_REPLACE,    /* store the new results under the old run id */
};

/* A sweep (or a tune search) as the sweeps table holds it. */
typedef struct msim_sweep_row_s {
	const char *kind;      /* "sweep" or "tune" */
	const char *spec;      /* what was swept, human-readable */
	const char *spec_hash; /* hex; equal for every shard of one sweep */
	int64_t seed;          /* random search seed, or -1 */
	int shard_index;       /* 1-based */
	int shard_count;
	int64_t settings;      /* settings of the whole sweep (all shards) */
} msim_sweep_row_t;

/* The run_meta of a simulation: its modelled device time under a
 * calibration and how many allocations landed at their recorded address.
 * kv is ready for msim_run_info_t.meta and points into m. */
typedef struct msim_sim_meta_s {
	char ms[32], same[24], other[24];
	const char *kv[9];
} msim_sim_meta_t;
void msim_sim_meta_fill(msim_sim_meta_t *m, double device_us,
			const char *calibration, const msim_summary_t *sum);

/* Opens (creating if needed) the database at path.  Returns 0, or MSIM_EDB
 * with why naming the file and SQLite's reason.  A msim_db_t is used by one
 * thread at a time (threads that share one must lock around its calls). */
int msim_db_open(const char *path, msim_db_t **out, char *why, size_t whylen);
void msim_db_close(msim_db_t *db);

/* Leaves the WAL's checkpoints to another connection that calls
 * msim_db_checkpoint(): db's commits no longer copy the WAL into the
 * database (with its two fsyncs) once it passes 1000 pages. */
void msim_db_defer_checkpoints(msim_db_t *db);

/* Closing db, if it is the file's last connection, leaves the WAL to the
 * next one (which checkpoints it when it closes) instead of copying it
 * into the database and deleting it: for a connection closed just before
 * others open the file (a sweep's parent before it forks its workers). */
void msim_db_keep_wal(msim_db_t *db);
/* Storing a run (msim_db_store_run_mode()) calls lock(ctx) before it asks
 * SQLite for the write lock and unlock(ctx) once it committed or rolled
 * back: writers that share such a lock (a sweep's workers) wait on it
 * rather than in SQLite's busy handler, which polls by sleeping.  lock
 * NULL: none. */
void msim_db_set_writer_lock(msim_db_t *db, void (*lock)(void *ctx),
			     void (*unlock)(void *ctx), void *ctx);

/* Copies into the database what the WAL holds, as far as the other
 * connections' readers allow, without waiting for any lock (a PASSIVE
 * checkpoint), and on Linux has the kernel start writing the copied pages
 * to the disk (the last connection's checkpoint then waits for less).
 * Returns 0 or MSIM_EDB. */
int msim_db_checkpoint(msim_db_t *db);

/* Copies the whole WAL into the database and starts it over (a RESTART
 * checkpoint; with truncate, TRUNCATE: the file emptied too), so that
 * it does not grow while other connections keep committing and the last
 * connection's close copies, syncs and deletes little.  The pages copied
 * before are synced first without the writer lock
 * (msim_db_set_writer_lock()); the lock is then held while the
 * checkpoint copies what was committed since and syncs.  Returns 0 (also
 * when a reader kept the WAL from starting over) or MSIM_EDB. */
int msim_db_restart_wal(msim_db_t *db, bool truncate);

/* As msim_db_open(), but a missing file is an error (MSIM_ENOTFOUND), not
 * a new database: for commands that only read. */
int msim_db_open_existing(const char *path, msim_db_t **out, char *why,
			  size_t whylen);

/*
 * Opens the existing database at path for reading only: nothing in the file
 * changes (an older schema is read as it is, not migrated), so a read-only
 * file or folder works.  A missing file is MSIM_ENOTFOUND.  For commands
 * that only read (report, plot).  Writing through it fails with MSIM_EDB.
 */
int msim_db_open_readonly(const char *path, msim_db_t **out, char *why,
			  size_t whylen);

/*
 * The setting key of a run: what makes two runs the same experiment
 * (kind, trace hash, policy, canonical parameters, cap, addresses, and
 * extras joined by ';': a non-default capacity, the strategy, the rows
 * replayed when not the default, a snapshot's device when given and not
 * 0),
 * "simulated|36eeba65058578f9|pytorch|max_split_size_mb:128|0|model|",
 * "...|model|strategy=dtype=bf16-amp,checkpoint=none".  Returns the
 * length it needed.
 */
size_t msim_db_setting_key(const msim_run_info_t *info, char *buf, size_t n);

/* The id of the run stored under key: 0, MSIM_ENOTFOUND or MSIM_EDB. */
int msim_db_find_run(msim_db_t *db, const char *key, int64_t *run_id_out);

/* "path: reason" of the last failure. */
const char *msim_db_errmsg(const msim_db_t *db);

/*
 * Stores one run in one transaction.  events may be NULL.  Returns 0 with
 * the new run's id, or MSIM_EDB (nothing of the run is stored then).
 */
int msim_db_store_run(msim_db_t *db, const msim_run_info_t *info,
		      const msim_summary_t *sum, const msim_stats_t *st,
		      const msim_timeline_t *tl, const msim_seg_event_t *events,
		      size_t nevents, int64_t *run_id_out);

/*
 * Stores one run under its setting key in one transaction; mode says what
 * to do when the key is already there (MSIM_DB_*).  *existed_out tells
 * whether it was.  With info->sweep_id the run (stored or kept) is recorded
 * as the sweep's in the same transaction.  msim_db_store_run() is this with
 * MSIM_DB_INSERT.  Returns 0 with the run's id, or MSIM_EDB.
 */
int msim_db_store_run_mode(msim_db_t *db, const msim_run_info_t *info,
			   const msim_summary_t *sum, const msim_stats_t *st,
			   const msim_timeline_t *tl,
			   const msim_seg_event_t *events, size_t nevents,
			   int mode, int64_t *run_id_out, int *existed_out);

/*
 * The sweep described by row: the one already stored with the same kind,
 * spec_hash and shard, or a new one.  Returns 0 with its id, or MSIM_EDB.
 */
int msim_db_sweep_open(msim_db_t *db, const msim_sweep_row_t *row,
		       int64_t *sweep_id_out);

/*
 * For each of the n setting keys, whether a run is stored under it
 * (present_out[i]); those that are get recorded as the sweep's runs.  One
 * transaction.  Returns 0 or MSIM_EDB.
 */
int msim_db_sweep_adopt(msim_db_t *db, int64_t sweep_id,
			const char *const *keys, size_t n,
			unsigned char *present_out);

/*
 * Stores that the setting under key failed in the sweep (status: "failed"
 * for an error, "crashed" for a worker that died), with its one-line
 * reason, replacing what an earlier attempt stored.  Returns 0 or
 * MSIM_EDB.
 */
int msim_db_sweep_fail(msim_db_t *db, int64_t sweep_id, const char *key,
		       const char *trace_path, const char *policy,
		       const char *params, const char *status,
		       const char *reason);

/* Forgets that the setting under key failed in the sweep (it has run
 * since).  Returns 0 or MSIM_EDB. */
int msim_db_sweep_unfail(msim_db_t *db, int64_t sweep_id, const char *key);

/* A failed setting, as msim_db_sweep_failed() hands it over (the strings
 * live until the callback returns). */
typedef struct msim_db_failed_s {
	int64_t sweep_id;
	const char *setting_key, *created, *trace_path, *policy, *params;
	const char *status, *reason;
} msim_db_failed_t;
typedef void (*msim_db_failed_fn)(void *ctx, const msim_db_failed_t *f);

/* Calls fn for each failed setting of the sweep (every sweep's when
 * sweep_id <= 0), by sweep and time.  A file of schema 4 or older has
 * none.  Returns 0 or MSIM_EDB. */
int msim_db_sweep_failed(msim_db_t *db, int64_t sweep_id,
			 msim_db_failed_fn fn, void *ctx);

/* Records a tune's outcome: the default's run, the best run and the
 * recommended setting.  Returns 0 or MSIM_EDB. */
int msim_db_sweep_set_result(msim_db_t *db, int64_t sweep_id,
			     int64_t baseline_run_id, int64_t best_run_id,
			     const char *result);

/*
 * Copies into db every run of the database at src_path whose setting is
 * not in db yet (with its statistics, timeline and segment events), and
 * the sweeps with their runs, in one transaction; src is only read.
 * Files of schema 1 and 2 are read too.  Returns 0 with the counts, or an error.
 */
int msim_db_merge(msim_db_t *db, const char *src_path, int64_t *added_out,
		  int64_t *skipped_out);

/* ------------------------------------------------------------------ */
/* Reading: what report, plot, report --compare, tune and merge see.   */

/*
 * The columns of the runs table, each named once: this list makes the
 * schema's CREATE TABLE, what storing a run writes (from the
 * msim_run_info_t, summary and statistics: the value), what reading one
 * reads (msim_db_run_t's members), what merge copies, and every printer of
 * a run (lab/figures.c: `memsim run --json`, `report --json`, memsim.h's
 * memsim_get_*() and Python's memsim.runs()).  Adding a column is a line
 * here and a migration in sim/results.c (docs/changing.md).
 *
 *	C(name, json, type, sql, since, show, value)
 *
 * name   the column and msim_db_run_t's member;
 * json   its key in the printers;
 * type   TEXT (char *, NULL read as ""), KEY (char *, NULL kept: JSON
 *        null), INT (int64_t), UINT (uint64_t), REAL3 and REAL6 (double,
 *        printed with 3 and 6 decimals);
 * sql    its declaration; without NOT NULL, an empty text or a 0 is
 *        stored as NULL;
 * since  the schema version that added it (older files read it as NULL,
 *        merge copies it so);
 * show   where printers put it: HEAD (before the statistics), TAIL (after
 *        them), STAT (not printed: a statistic says it, e.g.
 *        reserved_bytes.all.peak);
 * value  what a run stores, from info, sum, st (msim_db_store_run_mode()'s
 *        arguments) and key (its setting key, or NULL).
 */
#define MSIM_RUN_COLUMNS(C)						      \
 C(memsim_version, "memsim_version", TEXT, "TEXT NOT NULL", 1, TAIL,	      \
   PACKAGE_VERSION)							      \
 C(kind, "kind", TEXT, "TEXT NOT NULL", 1, TAIL,				      \
   info->kind ? info->kind : "simulated")				      \
 C(trace_path, "trace", TEXT, "TEXT NOT NULL", 1, HEAD, info->trace_path)     \
 C(trace_hash, "trace_hash", TEXT, "TEXT NOT NULL", 1, HEAD, info->trace_hash)\
 C(trace_format, "trace_format", TEXT, "TEXT", 1, TAIL, info->trace_format)   \
 C(policy, "policy", TEXT, "TEXT NOT NULL", 1, HEAD, info->policy)	      \
 C(params, "params", TEXT, "TEXT NOT NULL", 1, HEAD,			      \
   info->params ? info->params : "")					      \
 C(cap_bytes, "cap_bytes", UINT, "INTEGER NOT NULL", 1, HEAD, info->cap_bytes)\
 C(addresses, "addresses", TEXT, "TEXT", 1, TAIL, info->addresses)	      \
 C(requests, "requests", INT, "INTEGER NOT NULL", 1, HEAD, sum->requests)    \
 C(oom_request, "oom_request", INT, "INTEGER NOT NULL", 1, TAIL,	      \
   sum->oom_request)							      \
 C(peak_reserved_bytes, "peak_reserved_bytes", INT, "INTEGER NOT NULL", 1,    \
   STAT, st->reserved_bytes[MSIM_POOL_ALL].peak)			      \
 C(peak_allocated_bytes, "peak_allocated_bytes", INT, "INTEGER NOT NULL", 1,  \
   STAT, st->allocated_bytes[MSIM_POOL_ALL].peak)			      \
 C(peak_requested_bytes, "peak_requested_bytes", INT, "INTEGER NOT NULL", 1,  \
   STAT, st->requested_bytes[MSIM_POOL_ALL].peak)			      \
 C(frag_at_peak, "frag_at_peak", REAL6, "REAL NOT NULL", 1, TAIL,	      \
   sum->frag_at_peak)							      \
 C(frag_mean, "frag_mean", REAL6, "REAL NOT NULL", 1, TAIL, sum->frag_mean)   \
 C(ext_frag_max, "ext_frag_max", REAL6, "REAL NOT NULL", 1, TAIL,	      \
   sum->ext_frag_max)							      \
 C(num_device_alloc, "num_device_alloc", INT, "INTEGER NOT NULL", 1, STAT,   \
   st->num_device_alloc)						      \
 C(num_device_free, "num_device_free", INT, "INTEGER NOT NULL", 1, STAT,     \
   st->num_device_free)							      \
 C(num_alloc_retries, "num_alloc_retries", INT, "INTEGER NOT NULL", 1, STAT, \
   st->num_alloc_retries)						      \
 C(num_ooms, "num_ooms", INT, "INTEGER NOT NULL", 1, STAT, st->num_ooms)     \
 C(sim_time_ns, "sim_time_ns", INT, "INTEGER NOT NULL", 1, TAIL,	      \
   sum->end_time)							      \
 C(wall_ms, "wall_ms", REAL3, "REAL NOT NULL", 1, TAIL, info->wall_ms)	      \
 C(capacity_bytes, "capacity_bytes", UINT, "INTEGER", 2, TAIL,		      \
   info->capacity_bytes)						      \
 C(setting_key, "setting_key", KEY, "TEXT", 2, TAIL, key)		      \
 C(strategy, "strategy", TEXT, "TEXT", 3, HEAD, info->strategy)	      \
 MSIM_RUN_COLUMNS_EXTRA(C)

/* Columns a scratch build adds to the list (tests/check_column.c proves
 * that one line reaches every use); none in memsim itself. */
#ifndef MSIM_RUN_COLUMNS_EXTRA
#define MSIM_RUN_COLUMNS_EXTRA(C)
#endif

/* The C type of a column's member, by its type. */
#define MSIM_COL_CTYPE_TEXT char *
#define MSIM_COL_CTYPE_KEY char *
#define MSIM_COL_CTYPE_INT int64_t
#define MSIM_COL_CTYPE_UINT uint64_t
#define MSIM_COL_CTYPE_REAL3 double
#define MSIM_COL_CTYPE_REAL6 double

/* One run as stored (a run of `memsim run`, a sweep, or a measured run of
 * `memsim validate`): id, created, a member a column (MSIM_RUN_COLUMNS),
 * and the statistic segment.all.peak.  The strings belong to the struct:
 * msim_db_run_clear() frees them.  Figures the file's schema lacks read as
 * 0 or "" (setting_key: NULL). */
typedef struct msim_db_run_s {
	int64_t id;
	char *created;         /* UTC, 2026-01-31T12:00:00Z */
#define MSIM_COL_MEMBER(name, json, type, sql, since, show, value)	\
	MSIM_COL_CTYPE_##type name;
	MSIM_RUN_COLUMNS(MSIM_COL_MEMBER)
#undef MSIM_COL_MEMBER
	int64_t segments_peak; /* the statistic segment.all.peak */
} msim_db_run_t;

/* A column of MSIM_RUN_COLUMNS as data, for code that walks them all. */
enum { MSIM_COL_TEXT, MSIM_COL_KEY, MSIM_COL_INT, MSIM_COL_UINT,
       MSIM_COL_REAL3, MSIM_COL_REAL6 };
enum { MSIM_COL_HEAD, MSIM_COL_TAIL, MSIM_COL_STAT };
typedef struct msim_db_col_s {
	const char *name;  /* the column */
	const char *json;  /* its key in the printers */
	int type;          /* MSIM_COL_TEXT ... */
	const char *sql;   /* its declaration */
	int since;         /* schema version */
	int show;          /* MSIM_COL_HEAD ... */
	size_t offset;     /* of its member in msim_db_run_t */
} msim_db_col_t;

/* Whether the column stores an empty text or a 0 as NULL (its sql has
 * no NOT NULL). */
bool msim_db_col_nullable(const msim_db_col_t *col);

/* The columns, in the order of MSIM_RUN_COLUMNS. */
extern const msim_db_col_t msim_db_run_cols[];
extern const size_t msim_db_run_ncols;

/*
 * The row msim_db_store_run_mode() stores for info, sum, st under key (NULL:
 * none), into r: its strings point into info and key (r is not to be
 * cleared), id is -1 and created NULL.
 */
void msim_db_run_fill(msim_db_run_t *r, const msim_run_info_t *info,
		      const msim_summary_t *sum, const msim_stats_t *st,
		      const char *key);

void msim_db_run_clear(msim_db_run_t *run);

/* Reads run id.  Returns 0, MSIM_ENOTFOUND, MSIM_ENOMEM or MSIM_EDB. */
int msim_db_run_get(msim_db_t *db, int64_t id, msim_db_run_t *run_out);

/* Which runs msim_db_list_runs() returns, all matching (zero fields match
 * everything), in order of id. */
typedef struct msim_db_select_s {
	int64_t sweep_id;        /* > 0: the runs of this sweep */
	int all_shards;          /* with sweep_id: of every shard of it */
	const char *kind;        /* "measured", "simulated" */
	const char *trace_hash;
} msim_db_select_t;

/* The ids of the runs sel picks (*ids_out malloc'ed, NULL when none).
 * Returns 0 (also for none), MSIM_ENOMEM or MSIM_EDB. */
int msim_db_list_runs(msim_db_t *db, const msim_db_select_t *sel,
		      int64_t **ids_out, size_t *n_out);

/* The newest run and the newest sweep: 0, MSIM_ENOTFOUND or MSIM_EDB. */
int msim_db_newest_run(msim_db_t *db, int64_t *id_out);
int msim_db_newest_sweep(msim_db_t *db, int64_t *id_out);

/* Calls fn for each statistic stored for the run (memory_stats keys).
 * Returns 0 or MSIM_EDB. */
int msim_db_run_stats(msim_db_t *db, int64_t id,
		      void (*fn)(const char *name, int64_t value, void *ctx),
		      void *ctx);

/* One statistic of the run: 0, MSIM_ENOTFOUND or MSIM_EDB. */
int msim_db_run_stat(msim_db_t *db, int64_t id, const char *name,
		     int64_t *value_out);

/* Calls fn for each run_meta entry of the run, in order of key.
 * Returns 0 or MSIM_EDB. */
int msim_db_run_meta(msim_db_t *db, int64_t id,
		     void (*fn)(const char *key, const char *value, void *ctx),
		     void *ctx);

/* One run_meta value into buf: 0, MSIM_ENOTFOUND or MSIM_EDB. */
int msim_db_run_meta_get(msim_db_t *db, int64_t id, const char *key,
			 char *buf, size_t n);

/* Calls fn for each timeline sample of the run, in order of request; fn
 * returns 0 to go on.  Returns 0, MSIM_ENOTFOUND (no sample), MSIM_EDB or
 * what fn returned. */
int msim_db_run_timeline(msim_db_t *db, int64_t id,
			 int (*fn)(const msim_sample_t *s, void *ctx),
			 void *ctx);

/* Calls fn for each segment event of the run, in order; fn returns 0 to go
 * on.  Returns 0, MSIM_EDB or what fn returned. */
int msim_db_run_events(msim_db_t *db, int64_t id,
		       int (*fn)(const msim_seg_event_t *ev, void *ctx),
		       void *ctx);

/* The blocks the run's policy held at peak reserved, in order of address
 * (*blocks_out malloc'ed; none in files before schema 4).  Returns 0,
 * MSIM_ENOMEM or MSIM_EDB. */
int msim_db_run_peak_blocks(msim_db_t *db, int64_t id,
			    msim_block_t **blocks_out, size_t *n_out);

/* The figure of run named as its column of the runs table (the names of
 * `memsim plot --y`: peak_reserved_bytes, frag_at_peak, num_ooms, ...).
 * Returns 0, or MSIM_ENOTFOUND for a name that is not one. */
int msim_db_run_figure(const msim_db_run_t *run, const char *name,
		       double *value_out);

/* The names msim_db_run_figure() knows, NULL-terminated. */
extern const char *const msim_db_run_figures[];

/* Writes a run's timeline as CSV (request,time_ns,allocated,reserved,
 * active,requested,largest_free,free,frag,ext_frag) to path, for gnuplot.
 * Returns 0, MSIM_ENOTFOUND or MSIM_EIO/MSIM_EDB. */
int msim_db_export_timeline(msim_db_t *db, int64_t run_id, const char *path);

#endif
