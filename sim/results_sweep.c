/*
 * A sweep's bookkeeping in the results store (results.h): its row, the
 * runs it adopts, the settings that failed.
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

int
msim_db_sweep_open(msim_db_t *db, const msim_sweep_row_t *row,
		   int64_t *sweep_id_out)
{
	sqlite3_stmt *q = NULL;
	int rc;
	if ((rc = msim_dbi_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		return rc;
	if (sqlite3_prepare_v2(db->db, "SELECT id FROM sweeps WHERE kind=? AND"
			       " spec_hash=? AND shard_index=? AND"
			       " shard_count=?", -1, &q, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(q, 1, row->kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, row->spec_hash, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 3, row->shard_index);
	sqlite3_bind_int(q, 4, row->shard_count);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*sweep_id_out = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
		return msim_dbi_exec(db, "COMMIT", "cannot commit");
	}
	if (rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(q);
	if (sqlite3_prepare_v2(db->db, "INSERT INTO sweeps(kind, spec,"
			       " spec_hash, seed, shard_index, shard_count,"
			       " settings) VALUES(?,?,?,?,?,?,?)", -1, &q,
			       NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(q, 1, row->kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, row->spec, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, row->spec_hash, -1, SQLITE_STATIC);
	if (row->seed >= 0)
		sqlite3_bind_int64(q, 4, row->seed);
	else
		sqlite3_bind_null(q, 4);
	sqlite3_bind_int(q, 5, row->shard_index);
	sqlite3_bind_int(q, 6, row->shard_count);
	sqlite3_bind_int64(q, 7, row->settings);
	if (sqlite3_step(q) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(q);
	*sweep_id_out = sqlite3_last_insert_rowid(db->db);
	return msim_dbi_exec(db, "COMMIT", "cannot commit");
fail:
	rc = msim_dbi_fail(db, "cannot record the sweep");
	sqlite3_finalize(q);
	sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
msim_db_sweep_set_result(msim_db_t *db, int64_t sweep_id,
			 int64_t baseline_run_id, int64_t best_run_id,
			 const char *result)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, "UPDATE sweeps SET baseline_run_id=?,"
			       " best_run_id=?, result=? WHERE id=?", -1, &q,
			       NULL) != SQLITE_OK)
		return msim_dbi_fail(db, "cannot record the result");
	if (baseline_run_id >= 0)
		sqlite3_bind_int64(q, 1, baseline_run_id);
	if (best_run_id >= 0)
		sqlite3_bind_int64(q, 2, best_run_id);
	sqlite3_bind_text(q, 3, result, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, sweep_id);
	int rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : msim_dbi_fail(db, "cannot record the result");
}

int
msim_db_sweep_adopt(msim_db_t *db, int64_t sweep_id,
		    const char *const *keys, size_t n,
		    unsigned char *present_out)
{
	sqlite3_stmt *q = NULL, *m = NULL;
	int rc;
	if ((rc = msim_dbi_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		return rc;
	if (sqlite3_prepare_v2(db->db, "SELECT id FROM runs WHERE "
			       "setting_key=?", -1, &q, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db->db, "INSERT OR IGNORE INTO sweep_runs "
			       "VALUES(?,?)", -1, &m, NULL) != SQLITE_OK)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(q);
		sqlite3_bind_text(q, 1, keys[i], -1, SQLITE_STATIC);
		rc = sqlite3_step(q);
		present_out[i] = rc == SQLITE_ROW;
		if (rc == SQLITE_ROW && sweep_id > 0) {
			sqlite3_reset(m);
			sqlite3_bind_int64(m, 1, sweep_id);
			sqlite3_bind_int64(m, 2, sqlite3_column_int64(q, 0));
			if (sqlite3_step(m) != SQLITE_DONE)
				goto fail;
		} else if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
			goto fail;
		}
	}
	sqlite3_finalize(q);
	sqlite3_finalize(m);
	return msim_dbi_exec(db, "COMMIT", "cannot commit");
fail:
	rc = msim_dbi_fail(db, "cannot look up the settings");
	sqlite3_finalize(q);
	sqlite3_finalize(m);
	sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
msim_db_sweep_fail(msim_db_t *db, int64_t sweep_id, const char *key,
		   const char *trace_path, const char *policy,
		   const char *params, const char *status, const char *reason)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, "INSERT OR REPLACE INTO sweep_failed"
			       "(sweep_id, setting_key, trace_path, policy,"
			       " params, status, reason)"
			       " VALUES(?,?,?,?,?,?,?)", -1, &q, NULL)
	    != SQLITE_OK)
		return msim_dbi_fail(db, "cannot store the failed setting");
	sqlite3_bind_int64(q, 1, sweep_id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, trace_path, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, policy, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 5, params, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 6, status, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 7, reason, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q) == SQLITE_DONE ? 0
		: msim_dbi_fail(db, "cannot store the failed setting");
	sqlite3_finalize(q);
	return rc;
}

int
msim_db_sweep_unfail(msim_db_t *db, int64_t sweep_id, const char *key)
{
	if (!db->has_failed)
		return 0;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, "DELETE FROM sweep_failed WHERE "
			       "sweep_id=? AND setting_key=?", -1, &q, NULL)
	    != SQLITE_OK)
		return msim_dbi_fail(db, "cannot forget the failed setting");
	sqlite3_bind_int64(q, 1, sweep_id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q) == SQLITE_DONE ? 0
		: msim_dbi_fail(db, "cannot forget the failed setting");
	sqlite3_finalize(q);
	return rc;
}

int
msim_db_sweep_failed(msim_db_t *db, int64_t sweep_id,
		     msim_db_failed_fn fn, void *ctx)
{
	if (!db->has_failed)
		return 0; /* a file of schema 4 or older: none stored */
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, "SELECT sweep_id, setting_key,"
			       " created, trace_path, policy, params, status,"
			       " reason FROM sweep_failed WHERE ?1 <= 0 OR"
			       " sweep_id=?1 ORDER BY sweep_id, created,"
			       " setting_key", -1, &q, NULL) != SQLITE_OK)
		return msim_dbi_fail(db, "cannot read the failed settings");
	sqlite3_bind_int64(q, 1, sweep_id);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		msim_db_failed_t f = {
			.sweep_id = sqlite3_column_int64(q, 0),
			.setting_key = (const char *)sqlite3_column_text(q, 1),
			.created = (const char *)sqlite3_column_text(q, 2),
			.trace_path = (const char *)sqlite3_column_text(q, 3),
			.policy = (const char *)sqlite3_column_text(q, 4),
			.params = (const char *)sqlite3_column_text(q, 5),
			.status = (const char *)sqlite3_column_text(q, 6),
			.reason = (const char *)sqlite3_column_text(q, 7),
		};
		fn(ctx, &f);
	}
	rc = rc == SQLITE_DONE ? 0
		: msim_dbi_fail(db, "cannot read the failed settings");
	sqlite3_finalize(q);
	return rc;
}
