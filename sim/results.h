/*
 * The results store: one SQLite file holding runs (trace, policy, canonical
 * parameters, software version), their statistics, a down-sampled timeline
 * and the segment events.  Every run is written in one transaction, so a
 * killed writer leaves whole runs or none; WAL and a busy timeout let
 * several processes write one database.  The schema is documented in
 * README.md and versioned in the table meta.
 */
#ifndef MSIM_SIM_RESULTS_H
#define MSIM_SIM_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "sim/device.h"
#include "sim/engine.h"
#include "sim/metrics.h"
#include "sim/types.h"

#define MSIM_DB_SCHEMA_VERSION 1

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
	double wall_ms;
	/* More about the run as key, value, key, value, ..., NULL (may be
	 * NULL): the device and versions of a measured run, the modelled
	 * device time.  Stored in run_meta. */
	const char *const *meta;
} msim_run_info_t;

/* Opens (creating if needed) the database at path.  Returns 0, or MSIM_EDB
 * with why naming the file and SQLite's reason. */
int msim_db_open(const char *path, msim_db_t **out, char *why, size_t whylen);
void msim_db_close(msim_db_t *db);

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

/* Writes a run's timeline as CSV (request,time_ns,allocated,reserved,
 * active,requested,largest_free,free,frag,ext_frag) to path, for gnuplot.
 * Returns 0, MSIM_ENOTFOUND or MSIM_EIO/MSIM_EDB. */
int msim_db_export_timeline(msim_db_t *db, int64_t run_id, const char *path);

#endif
