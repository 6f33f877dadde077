/*
 * For the files of the results store (sim/results_*.c), SQLite style: the
 * connection object and the helpers they share.  Users of the store
 * include sim/results.h only.  Nothing here is exported by libmemsim
 * (only memsim_*); the msim_dbi_ prefix keeps it out of the way of a
 * program linking the static library.
 */
#ifndef MSIM_SIM_RESULTS_INT_H
#define MSIM_SIM_RESULTS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "sim/results.h"

#define MSIM_STR_(x) #x
#define MSIM_STR(x) MSIM_STR_(x)

/*
 * The tables of schema 5 (stats: 6) and before that schema 7 keeps packed:
 * each run's rows as one JSON array of rows, [[v1,v2,...],...], in the
 * order of `order` (a sweep setting stores about 2,700 rows: as rows,
 * SQLite's B-tree insert, uniqueness check and record making cost ~5k
 * instructions each, 80% of storing a setting; packed, one row of text).
 * The view of each name (views_sql, results.c) reads them as the rows
 * they were, so SQL that read the tables reads the views.  Older files
 * are packed when first opened for writing (db_pack_old()); read-only
 * they are read as they are.
 */
enum { DB_PACKED_TIMELINE, DB_PACKED_EVENTS, DB_PACKED_BLOCKS,
       DB_PACKED_STATS, DB_NPACKED };
extern const struct msim_dbi_packed_s {
	const char *table; /* the view's name, the table's of schema 5 */
	const char *cols;  /* the columns of a row, in the array's order */
	const char *order; /* the order of a run's rows */
} msim_dbi_packed[DB_NPACKED];

struct msim_db_s {
	sqlite3 *db;
	char *path;
	int busy_ms;     /* how long to wait for another writer's lock */
	double busy_t0;  /* when the current wait began */
	int version;     /* the file's schema (read-only: as found) */
	bool readonly;
	bool has_meta, has_blocks, has_sweeps, has_failed; /* tables older
							     * files lack */
	char errmsg[2560];
	bool fk_off;     /* foreign-key checks switched off (db_fk()) */
	/* Taken around the write transaction of storing a run
	 * (msim_db_set_writer_lock()); NULL: none. */
	void (*wlock)(void *ctx), (*wunlock)(void *ctx);
	void *wctx;
	/* The database file, opened by msim_db_checkpoint() for its hint to
	 * the kernel (or to sync a new file, db_fresh_sync()) and closed
	 * only after the connection (closing a
	 * descriptor of the file drops the process's POSIX locks on it,
	 * SQLite's too); -1: not open. */
	int ck_fd;
	/* The inserts of db_packed's tables, and the text they store;
	 * prepared once a connection, kept for the next runs stored (a
	 * sweep's worker stores many). */
	sqlite3_stmt *packed[4];
	/* The other statements of storing a run (db_stmt()). */
	sqlite3_stmt *q[5];
	struct jbuf_s {
		char *p;
		size_t n, cap;
		bool nomem;
	} jb[4];
	/* The statistics' order by name, as msim_stats_foreach() gave them
	 * to the last run stored (db_pack_stats()). */
	uint16_t *stat_order;
	size_t nstat_order;
};

/* results.c */

/* Fills db->errmsg with "path: what: SQLite's message"; MSIM_EDB. */
int msim_dbi_fail(msim_db_t *db, const char *what);
/* Runs sql (no rows); 0, or msim_dbi_fail(db, what). */
int msim_dbi_exec(msim_db_t *db, const char *sql, const char *what);
/* Foreign-key checks on or off (see results.c); 0 or MSIM_EDB. */
int msim_dbi_fk(msim_db_t *db, bool on);
/* Runs one statement with up to two integer parameters; SQLITE_DONE or
 * SQLITE_ROW (then *v_out is the first column) or an error code. */
int msim_dbi_step2(msim_db_t *db, const char *sql, int64_t a, int64_t b,
		   int64_t *v_out);
/* Packs run src_id's rows of schema's table msim_dbi_packed[k] into
 * main's packed table as run dst_id.  SQLITE_DONE or SQLite's error. */
int msim_dbi_pack_rows(msim_db_t *db, size_t k, const char *schema,
		       int64_t dst_id, int64_t src_id);
/* Whether schema ("main", "src") holds table (or view) name. */
bool msim_dbi_schema_has(msim_db_t *db, const char *schema,
			 const char *name);
/* The runs columns (MSIM_RUN_COLUMNS) as a SELECT list, "a, b, ...", of
 * a file of schema version: a column it lacks reads NULL, or (the
 * setting key) v1_key where not NULL. */
void msim_dbi_run_select(char *buf, size_t n, int version,
			 const char *v1_key);
/* "file:PATH?QUERY" with the URI's special characters escaped. */
void msim_dbi_uri(const char *path, const char *query, char *buf, size_t n);

/* results_wal.c */

/* The name of the VFS that gathers WAL frames; NULL (the default VFS)
 * where it could not be registered. */
const char *msim_dbi_wal_vfs(void);

/* results_write.c */

/* The columns of the runs row that storing and merging a run write
 * ("memsim_version, kind, ..., strategy, "), and a parameter for each
 * ("?,?,...,"): MSIM_RUN_COLUMNS (sim/results.h). */
#define RUN_COL_NAME(name, json, type, sql, since, show, value) #name ", "
#define RUN_COL_PARAM(name, json, type, sql, since, show, value) "?,"
#define RUN_COLS MSIM_RUN_COLUMNS(RUN_COL_NAME)
#define RUN_VALS MSIM_RUN_COLUMNS(RUN_COL_PARAM)

/* The names of msim_block_t's states, as the packed rows store them. */
extern const char *const msim_dbi_block_states[3];

/* Looks up the run stored under key: 1 with its id, 0, or MSIM_EDB. */
int msim_dbi_find_key(msim_db_t *db, const char *key, int64_t *id_out);

#endif
