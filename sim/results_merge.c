/*
 * `memsim merge` in the results store (results.h): copies another file's
 * runs (any schema) and sweeps into this one, skipping settings stored
 * already.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sim/error.h"
#include "sim/grow.h"
#include "sim/results_int.h"

/* The setting key of a schema 1 row, as the migration computes it. */
#define V1_KEY_SQL							\
	"kind || '|' || trace_hash || '|' || policy || '|' || params ||"	\
	" '|' || cap_bytes || '|' || coalesce(addresses, 'model') || '|'"

/* Whether the attached file src holds table name. */
static bool
merge_src_has(msim_db_t *db, const char *name)
{
	return msim_dbi_schema_has(db, "src", name);
}

/* Attaches uri as src: SQLITE_DONE or SQLite's error. */
static int
merge_attach_uri(msim_db_t *db, const char *uri)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, "ATTACH DATABASE ? AS src", -1, &q,
			       NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	sqlite3_bind_text(q, 1, uri, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc;
}

/* Attaches src_path as src, read-only, and reads its schema version.
 * Returns 0, or an error with db->errmsg naming src_path (detached again
 * then).  As for msim_db_open_readonly(), a WAL file in a read-only folder
 * is read as immutable. */
static int
merge_attach(msim_db_t *db, const char *src_path, int64_t *version_out)
{
	if (access(src_path, R_OK)) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", src_path,
			 strerror(errno));
		return MSIM_ENOTFOUND;
	}
	static const char *const modes[] = {"mode=ro", "immutable=1"};
	int64_t version = 0;
	int rc = SQLITE_ERROR;
	for (int k = 0; k < 2; k++) {
		char uri[8192];
		msim_dbi_uri(src_path, modes[k], uri, sizeof(uri));
		rc = merge_attach_uri(db, uri);
		bool ro = (rc & 0xff) == SQLITE_CANTOPEN ||
			  (rc & 0xff) == SQLITE_READONLY;
		if (rc != SQLITE_DONE && !k && ro)
			continue; /* no -shm beside it: immutable */
		if (rc != SQLITE_DONE) {
			snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s",
				 src_path, sqlite3_errmsg(db->db));
			return MSIM_EDB;
		}
		rc = msim_dbi_step2(db, "SELECT CAST(value AS INTEGER) FROM src.meta"
			      " WHERE key='schema_version'", 0, 0, &version);
		if (k || ((rc & 0xff) != SQLITE_CANTOPEN &&
			  (rc & 0xff) != SQLITE_READONLY))
			break;
		sqlite3_exec(db->db, "DETACH DATABASE src", NULL, NULL, NULL);
	}
	if (rc != SQLITE_ROW || version < 1 ||
	    version > MSIM_DB_SCHEMA_VERSION) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", src_path,
			 rc == SQLITE_ROW ? "a schema version this memsim "
			 "does not know" : "not a memsim database");
		sqlite3_exec(db->db, "DETACH DATABASE src", NULL, NULL, NULL);
		return MSIM_EDB;
	}
	*version_out = version;
	return 0;
}

/* Copies the runs row src_id of src into main: 0 with its new id. */
static int
merge_run_row(msim_db_t *db, int64_t version, int64_t src_id,
	      int64_t *dst_id_out)
{
	char cols[2048], ins[4096];
	msim_dbi_run_select(cols, sizeof(cols), (int)version, V1_KEY_SQL);
	snprintf(ins, sizeof(ins), "INSERT INTO main.runs(" RUN_COLS "created)"
		 " SELECT %s, created FROM src.runs WHERE id=?", cols);
	if (msim_dbi_step2(db, ins, src_id, 0, NULL) != SQLITE_DONE)
		return MSIM_EDB;
	*dst_id_out = sqlite3_last_insert_rowid(db->db);
	return 0;
}

/* The tables of a run's results, as merge copies them (?1 the new run id,
 * ?2 the source's); a table an older file lacks is skipped.  packed: the
 * index into msim_dbi_packed of a table main keeps packed (sql NULL), whether
 * src holds it as rows (schema 5 and before) or packed (a view). */
static const struct merge_table_s {
	const char *table;
	const char *sql;
	int packed;
} merge_tables[] = {
	{"stats", NULL, DB_PACKED_STATS},
	{"timeline", NULL, DB_PACKED_TIMELINE},
	{"segment_events", NULL, DB_PACKED_EVENTS},
	/* run_meta came with validation mode, peak_blocks with schema 4. */
	{"run_meta", "INSERT INTO main.run_meta SELECT ?, key, value"
		     " FROM src.run_meta WHERE run_id=?2", -1},
	{"peak_blocks", NULL, DB_PACKED_BLOCKS},
};
#define NMERGE_TABLES (sizeof(merge_tables) / sizeof(merge_tables[0]))

/* Copies run src_id's rows of merge_tables[k] as run dst_id's. */
static int
merge_table(msim_db_t *db, size_t k, int64_t dst_id, int64_t src_id)
{
	const struct merge_table_s *t = &merge_tables[k];
	return t->sql ? msim_dbi_step2(db, t->sql, dst_id, src_id, NULL)
		      : msim_dbi_pack_rows(db, (size_t)t->packed, "src", dst_id,
				     src_id);
}

/* Copies every run of src whose setting main lacks, with its results;
 * merge_ids maps each source run to its run in main. */
static int
merge_runs(msim_db_t *db, int64_t version, int64_t *added, int64_t *skipped)
{
	bool has[NMERGE_TABLES];
	for (size_t k = 0; k < NMERGE_TABLES; k++)
		has[k] = merge_src_has(db, merge_tables[k].table);
	char sql[512];
	snprintf(sql, sizeof(sql), "SELECT id, %s FROM src.runs ORDER BY id",
		 version >= 2 ? "setting_key" : V1_KEY_SQL);
	sqlite3_stmt *runs;
	if (sqlite3_prepare_v2(db->db, sql, -1, &runs, NULL) != SQLITE_OK)
		return msim_dbi_fail(db, "cannot merge");
	int rc;
	while ((rc = sqlite3_step(runs)) == SQLITE_ROW) {
		int64_t src_id = sqlite3_column_int64(runs, 0);
		const char *key = (const char *)sqlite3_column_text(runs, 1);
		if (!key) { /* an older duplicate of a schema 1 file */
			(*skipped)++;
			continue;
		}
		int64_t dst_id;
		if ((rc = msim_dbi_find_key(db, key, &dst_id)) < 0)
			break;
		if (rc) {
			(*skipped)++;
		} else {
			if (merge_run_row(db, version, src_id, &dst_id))
				break;
			size_t k = 0;
			while (k < NMERGE_TABLES &&
			       (!has[k] || merge_table(db, k, dst_id, src_id) ==
						   SQLITE_DONE))
				k++;
			if (k < NMERGE_TABLES)
				break;
			(*added)++;
		}
		if (msim_dbi_step2(db, "INSERT INTO merge_ids VALUES(?,?)", src_id,
			     dst_id, NULL) != SQLITE_DONE)
			break;
		rc = SQLITE_ROW;
	}
	if (rc != SQLITE_DONE && rc != MSIM_EDB)
		msim_dbi_fail(db, "cannot merge");
	sqlite3_finalize(runs);
	return rc == SQLITE_DONE ? 0 : MSIM_EDB;
}

/* The sweep of main that is src's sweep src_sweep (same kind, spec_hash
 * and shard), made if main lacks it. */
static int
merge_sweep_row(msim_db_t *db, int64_t src_sweep, int64_t *dst_out)
{
	int64_t dst = -1;
	int rc = msim_dbi_step2(db, "SELECT m.id FROM main.sweeps m JOIN src.sweeps s"
			  " ON m.kind=s.kind AND m.spec_hash=s.spec_hash AND"
			  " m.shard_index=s.shard_index AND"
			  " m.shard_count=s.shard_count WHERE s.id=?",
			  src_sweep, 0, &dst);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return MSIM_EDB;
	if (rc == SQLITE_DONE) {
		if (msim_dbi_step2(db, "INSERT INTO main.sweeps(created,"
			     " kind, spec, spec_hash, seed,"
			     " shard_index, shard_count, settings,"
			     " baseline_run_id, best_run_id, result)"
			     " SELECT created, kind, spec, spec_hash,"
			     " seed, shard_index, shard_count,"
			     " settings, (SELECT dst FROM merge_ids"
			     " WHERE src=baseline_run_id), (SELECT"
			     " dst FROM merge_ids WHERE"
			     " src=best_run_id), result FROM"
			     " src.sweeps WHERE id=?", src_sweep, 0,
			     NULL) != SQLITE_DONE)
			return MSIM_EDB;
		dst = sqlite3_last_insert_rowid(db->db);
	}
	*dst_out = dst;
	return 0;
}

/* Sweeps: the same sweep shard is one row; its runs are the union of what
 * each file holds. */
static int
merge_sweeps(msim_db_t *db)
{
	sqlite3_stmt *q;
	bool failed = merge_src_has(db, "sweep_failed");
	if (sqlite3_prepare_v2(db->db, "SELECT id FROM src.sweeps ORDER BY id",
			       -1, &q, NULL) != SQLITE_OK)
		return msim_dbi_fail(db, "cannot merge");
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t src_sweep = sqlite3_column_int64(q, 0), dst_sweep;
		if (merge_sweep_row(db, src_sweep, &dst_sweep) ||
		    msim_dbi_step2(db, "INSERT OR IGNORE INTO main.sweep_runs"
			     " SELECT ?, m.dst FROM src.sweep_runs s"
			     " JOIN merge_ids m ON m.src=s.run_id"
			     " WHERE s.sweep_id=?2", dst_sweep, src_sweep,
			     NULL) != SQLITE_DONE ||
		    /* Its failed settings, but for those run in either. */
		    (failed &&
		     (msim_dbi_step2(db, "INSERT OR IGNORE INTO main.sweep_failed"
			       " SELECT ?, setting_key, created, trace_path,"
			       " policy, params, status, reason"
			       " FROM src.sweep_failed WHERE sweep_id=?2",
			       dst_sweep, src_sweep, NULL) != SQLITE_DONE)) ||
		    msim_dbi_step2(db, "DELETE FROM main.sweep_failed WHERE"
			     " sweep_id=? AND setting_key IN (SELECT"
			     " setting_key FROM main.runs WHERE setting_key"
			     " IS NOT NULL)", dst_sweep, 0, NULL)
		    != SQLITE_DONE) {
			rc = SQLITE_ERROR;
			break;
		}
	}
	if (rc != SQLITE_DONE)
		msim_dbi_fail(db, "cannot merge");
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : MSIM_EDB;
}

int
msim_db_merge(msim_db_t *db, const char *src_path, int64_t *added_out,
	      int64_t *skipped_out)
{
	int64_t added = 0, skipped = 0, version;
	int rc;
	if (db->readonly) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: opened for "
			 "reading only", db->path);
		return MSIM_EDB;
	}
	if ((rc = msim_dbi_fk(db, true)) ||
	    (rc = merge_attach(db, src_path, &version)))
		return rc;
	if ((rc = msim_dbi_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		goto detach;
	if ((rc = msim_dbi_exec(db, "CREATE TEMP TABLE IF NOT EXISTS merge_ids("
			  "src INTEGER PRIMARY KEY, dst INTEGER NOT NULL);"
			  "DELETE FROM merge_ids;", "cannot merge")) ||
	    (rc = merge_runs(db, version, &added, &skipped)) ||
	    (version >= 2 && (rc = merge_sweeps(db))) ||
	    (rc = msim_dbi_exec(db, "COMMIT", "cannot commit"))) {
		sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
		goto detach;
	}
	*added_out = added;
	*skipped_out = skipped;
detach:
	sqlite3_exec(db->db, "DETACH DATABASE src", NULL, NULL, NULL);
	return rc;
}
