/* The SQLite results store of results.h. */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "sim/error.h"
#include "sim/results.h"

struct msim_db_s {
	sqlite3 *db;
	char *path;
	char errmsg[512];
};

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta("
	" key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS runs("
	" id INTEGER PRIMARY KEY,"
	" created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"
	" memsim_version TEXT NOT NULL,"
	" kind TEXT NOT NULL,"
	" trace_path TEXT NOT NULL,"
	" trace_hash TEXT NOT NULL,"
	" trace_format TEXT,"
	" policy TEXT NOT NULL,"
	" params TEXT NOT NULL,"
	" cap_bytes INTEGER NOT NULL,"
	" addresses TEXT,"
	" requests INTEGER NOT NULL,"
	" oom_request INTEGER NOT NULL,"
	" peak_reserved_bytes INTEGER NOT NULL,"
	" peak_allocated_bytes INTEGER NOT NULL,"
	" peak_requested_bytes INTEGER NOT NULL,"
	" frag_at_peak REAL NOT NULL,"
	" frag_mean REAL NOT NULL,"
	" ext_frag_max REAL NOT NULL,"
	" num_device_alloc INTEGER NOT NULL,"
	" num_device_free INTEGER NOT NULL,"
	" num_alloc_retries INTEGER NOT NULL,"
	" num_ooms INTEGER NOT NULL,"
	" sim_time_ns INTEGER NOT NULL,"
	" wall_ms REAL NOT NULL);"
	"CREATE TABLE IF NOT EXISTS stats("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" name TEXT NOT NULL, value INTEGER NOT NULL,"
	" PRIMARY KEY(run_id, name)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS timeline("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" request INTEGER NOT NULL, time_ns INTEGER NOT NULL,"
	" allocated_bytes INTEGER NOT NULL, reserved_bytes INTEGER NOT NULL,"
	" active_bytes INTEGER NOT NULL, requested_bytes INTEGER NOT NULL,"
	" largest_free_bytes INTEGER NOT NULL, free_bytes INTEGER NOT NULL,"
	" PRIMARY KEY(run_id, request)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS run_meta("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL, value TEXT NOT NULL,"
	" PRIMARY KEY(run_id, key)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS segment_events("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL, request INTEGER NOT NULL,"
	" action TEXT NOT NULL, addr INTEGER NOT NULL, size INTEGER NOT NULL,"
	" PRIMARY KEY(run_id, seq)) WITHOUT ROWID;";

static int
db_fail(msim_db_t *db, const char *what)
{
	snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s: %s", db->path, what,
		 db->db ? sqlite3_errmsg(db->db) : "cannot open");
	return MSIM_EDB;
}

static int
db_exec(msim_db_t *db, const char *sql, const char *what)
{
	if (sqlite3_exec(db->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(db, what);
	return 0;
}

int
msim_db_open(const char *path, msim_db_t **out, char *why, size_t whylen)
{
	msim_db_t *db = calloc(1, sizeof(*db));
	if (!db || !(db->path = strdup(path))) {
		free(db);
		snprintf(why, whylen, "%s: %s", path, msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	int rc = MSIM_EDB;
	if (sqlite3_open_v2(path, &db->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    NULL) != SQLITE_OK) {
		db_fail(db, "cannot open");
		goto fail;
	}
	const char *busy = getenv("MEMSIM_DB_BUSY_MS");
	sqlite3_busy_timeout(db->db, busy && *busy ? atoi(busy) : 10000);
	sqlite3_extended_result_codes(db->db, 1);
	/* WAL lets readers and several writers share the file; where the file
	 * system cannot do WAL, SQLite keeps its rollback journal. */
	sqlite3_exec(db->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
	if ((rc = db_exec(db, "PRAGMA foreign_keys=ON", "pragma")))
		goto fail;
	if ((rc = db_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		goto fail;
	if ((rc = db_exec(db, schema_sql, "cannot create the schema")))
		goto rollback;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db,
			       "SELECT value FROM meta WHERE key="
			       "'schema_version'", -1, &q, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot read the schema version");
		goto rollback;
	}
	int have = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0)
						 : 0;
	sqlite3_finalize(q);
	if (have > MSIM_DB_SCHEMA_VERSION) {
		snprintf(db->errmsg, sizeof(db->errmsg),
			 "%s: schema version %d is newer than this memsim "
			 "understands (%d)", path, have,
			 MSIM_DB_SCHEMA_VERSION);
		rc = MSIM_EDB;
		goto rollback;
	}
	if (!have &&
	    (rc = db_exec(db,
			  "INSERT INTO meta VALUES('schema_version','1'),"
			  "('created_by','memsim " PACKAGE_VERSION "')",
			  "cannot write the schema version")))
		goto rollback;
	if ((rc = db_exec(db, "COMMIT", "cannot commit")))
		goto rollback;
	*out = db;
	return 0;
rollback:
	sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
fail:
	snprintf(why, whylen, "%s", db->errmsg);
	msim_db_close(db);
	return rc;
}

void
msim_db_close(msim_db_t *db)
{
	if (!db)
		return;
	sqlite3_close(db->db);
	free(db->path);
	free(db);
}

const char *
msim_db_errmsg(const msim_db_t *db)
{
	return db->errmsg;
}

typedef struct stat_ins_s {
	sqlite3_stmt *q;
	int64_t run_id;
	int rc;
} stat_ins_t;

static void
stat_insert(const char *name, int64_t value, void *ctx)
{
	stat_ins_t *s = ctx;
	if (s->rc != SQLITE_DONE)
		return;
	sqlite3_reset(s->q);
	sqlite3_bind_int64(s->q, 1, s->run_id);
	sqlite3_bind_text(s->q, 2, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s->q, 3, value);
	s->rc = sqlite3_step(s->q);
}

int
msim_db_store_run(msim_db_t *db, const msim_run_info_t *info,
		  const msim_summary_t *sum, const msim_stats_t *st,
		  const msim_timeline_t *tl, const msim_seg_event_t *events,
		  size_t nevents, int64_t *run_id_out)
{
	sqlite3_stmt *q = NULL;
	int rc;
	if ((rc = db_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		return rc;
	static const char run_sql[] =
		"INSERT INTO runs(memsim_version, kind, trace_path, trace_hash,"
		" trace_format, policy, params, cap_bytes, addresses, requests,"
		" oom_request, peak_reserved_bytes, peak_allocated_bytes,"
		" peak_requested_bytes, frag_at_peak, frag_mean, ext_frag_max,"
		" num_device_alloc, num_device_free, num_alloc_retries,"
		" num_ooms, sim_time_ns, wall_ms)"
		" VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
	if (sqlite3_prepare_v2(db->db, run_sql, -1, &q, NULL) != SQLITE_OK)
		goto fail;
	int i = 1;
	sqlite3_bind_text(q, i++, PACKAGE_VERSION, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, i++, info->kind ? info->kind : "simulated", -1,
			  SQLITE_STATIC);
	sqlite3_bind_text(q, i++, info->trace_path, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, i++, info->trace_hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, i++, info->trace_format, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, i++, info->policy, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, i++, info->params ? info->params : "", -1,
			  SQLITE_STATIC);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)info->cap_bytes);
	sqlite3_bind_text(q, i++, info->addresses, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)sum->requests);
	sqlite3_bind_int64(q, i++, sum->oom_request);
	sqlite3_bind_int64(q, i++, st->reserved_bytes[MSIM_POOL_ALL].peak);
	sqlite3_bind_int64(q, i++, st->allocated_bytes[MSIM_POOL_ALL].peak);
	sqlite3_bind_int64(q, i++, st->requested_bytes[MSIM_POOL_ALL].peak);
	sqlite3_bind_double(q, i++, sum->frag_at_peak);
	sqlite3_bind_double(q, i++, sum->frag_mean);
	sqlite3_bind_double(q, i++, sum->ext_frag_max);
	sqlite3_bind_int64(q, i++, st->num_device_alloc);
	sqlite3_bind_int64(q, i++, st->num_device_free);
	sqlite3_bind_int64(q, i++, st->num_alloc_retries);
	sqlite3_bind_int64(q, i++, st->num_ooms);
	sqlite3_bind_int64(q, i++, (sqlite3_int64)sum->end_time);
	sqlite3_bind_double(q, i++, info->wall_ms);
	if (sqlite3_step(q) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(q);
	q = NULL;
	int64_t run_id = sqlite3_last_insert_rowid(db->db);

	if (sqlite3_prepare_v2(db->db, "INSERT INTO stats VALUES(?,?,?)", -1,
			       &q, NULL) != SQLITE_OK)
		goto fail;
	stat_ins_t si = {q, run_id, SQLITE_DONE};
	msim_stats_foreach(st, stat_insert, &si);
	if (si.rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(q);
	q = NULL;

	if (tl && tl->n) {
		if (sqlite3_prepare_v2(db->db,
				       "INSERT INTO timeline VALUES"
				       "(?,?,?,?,?,?,?,?,?)", -1, &q,
				       NULL) != SQLITE_OK)
			goto fail;
		for (size_t k = 0; k < tl->n; k++) {
			const msim_sample_t *s = &tl->v[k];
			sqlite3_reset(q);
			sqlite3_bind_int64(q, 1, run_id);
			sqlite3_bind_int64(q, 2, (sqlite3_int64)s->request);
			sqlite3_bind_int64(q, 3, (sqlite3_int64)s->time);
			sqlite3_bind_int64(q, 4, s->allocated);
			sqlite3_bind_int64(q, 5, s->reserved);
			sqlite3_bind_int64(q, 6, s->active);
			sqlite3_bind_int64(q, 7, s->requested);
			sqlite3_bind_int64(q, 8, (sqlite3_int64)s->largest_free);
			sqlite3_bind_int64(q, 9, (sqlite3_int64)s->free);
			if (sqlite3_step(q) != SQLITE_DONE)
				goto fail;
		}
		sqlite3_finalize(q);
		q = NULL;
	}
	if (events && nevents) {
		if (sqlite3_prepare_v2(db->db,
				       "INSERT INTO segment_events VALUES"
				       "(?,?,?,?,?,?)", -1, &q,
				       NULL) != SQLITE_OK)
			goto fail;
		for (size_t k = 0; k < nevents; k++) {
			sqlite3_reset(q);
			sqlite3_bind_int64(q, 1, run_id);
			sqlite3_bind_int64(q, 2, (sqlite3_int64)k);
			sqlite3_bind_int64(q, 3,
					   (sqlite3_int64)events[k].request);
			sqlite3_bind_text(q, 4,
					  msim_seg_action_name(events[k].action),
					  -1, SQLITE_STATIC);
			sqlite3_bind_int64(q, 5, (sqlite3_int64)events[k].addr);
			sqlite3_bind_int64(q, 6, (sqlite3_int64)events[k].size);
			if (sqlite3_step(q) != SQLITE_DONE)
				goto fail;
		}
		sqlite3_finalize(q);
		q = NULL;
	}
	if (info->meta) {
		if (sqlite3_prepare_v2(db->db,
				       "INSERT INTO run_meta VALUES(?,?,?)", -1,
				       &q, NULL) != SQLITE_OK)
			goto fail;
		for (const char *const *m = info->meta; m[0] && m[1]; m += 2) {
			sqlite3_reset(q);
			sqlite3_bind_int64(q, 1, run_id);
			sqlite3_bind_text(q, 2, m[0], -1, SQLITE_STATIC);
			sqlite3_bind_text(q, 3, m[1], -1, SQLITE_STATIC);
			if (sqlite3_step(q) != SQLITE_DONE)
				goto fail;
		}
		sqlite3_finalize(q);
		q = NULL;
	}
	if ((rc = db_exec(db, "COMMIT", "cannot commit")))
		goto rollback;
	*run_id_out = run_id;
	return 0;
fail:
	rc = db_fail(db, "cannot store the run");
	sqlite3_finalize(q);
rollback:
	sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
msim_db_export_timeline(msim_db_t *db, int64_t run_id, const char *path)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db,
			       "SELECT request, time_ns, allocated_bytes,"
			       " reserved_bytes, active_bytes, requested_bytes,"
			       " largest_free_bytes, free_bytes FROM timeline"
			       " WHERE run_id=? ORDER BY request", -1, &q,
			       NULL) != SQLITE_OK)
		return db_fail(db, "cannot read the timeline");
	sqlite3_bind_int64(q, 1, run_id);
	FILE *fp = fopen(path, "w");
	if (!fp) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", path,
			 strerror(errno));
		sqlite3_finalize(q);
		return MSIM_EIO;
	}
	fprintf(fp, "request,time_ns,allocated,reserved,active,requested,"
		"largest_free,free,frag,ext_frag\n");
	int rc, rows = 0;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t v[8];
		for (int k = 0; k < 8; k++)
			v[k] = sqlite3_column_int64(q, k);
		fprintf(fp, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%.6f,%.6f\n",
			(long long)v[0], (long long)v[1], (long long)v[2],
			(long long)v[3], (long long)v[4], (long long)v[5],
			(long long)v[6], (long long)v[7], msim_frag(v[2], v[3]),
			msim_ext_frag((uint64_t)v[6], (uint64_t)v[7]));
		rows++;
	}
	sqlite3_finalize(q);
	if (fclose(fp) != 0 || rc != SQLITE_DONE) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: cannot write the "
			 "timeline", path);
		return rc != SQLITE_DONE ? MSIM_EDB : MSIM_EIO;
	}
	return rows ? 0 : MSIM_ENOTFOUND;
}
