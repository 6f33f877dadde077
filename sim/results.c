/* The SQLite results store of results.h. */
#include <config.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sim/error.h"
#include "sim/results.h"

#define MSIM_STR_(x) #x
#define MSIM_STR(x) MSIM_STR_(x)

struct msim_db_s {
	sqlite3 *db;
	char *path;
	int busy_ms;     /* how long to wait for another writer's lock */
	double busy_t0;  /* when the current wait began */
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
	" wall_ms REAL NOT NULL,"
	" capacity_bytes INTEGER,"
	" setting_key TEXT,"
	" strategy TEXT);"
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
	"CREATE TABLE IF NOT EXISTS peak_blocks("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" addr INTEGER NOT NULL, size INTEGER NOT NULL, state TEXT NOT NULL,"
	" PRIMARY KEY(run_id, addr)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS run_meta("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL, value TEXT NOT NULL,"
	" PRIMARY KEY(run_id, key)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS segment_events("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" seq INTEGER NOT NULL, request INTEGER NOT NULL,"
	" action TEXT NOT NULL, addr INTEGER NOT NULL, size INTEGER NOT NULL,"
	" PRIMARY KEY(run_id, seq)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS sweeps("
	" id INTEGER PRIMARY KEY,"
	" created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"
	" kind TEXT NOT NULL,"
	" spec TEXT NOT NULL,"
	" spec_hash TEXT NOT NULL,"
	" seed INTEGER,"
	" shard_index INTEGER NOT NULL,"
	" shard_count INTEGER NOT NULL,"
	" settings INTEGER NOT NULL,"
	" baseline_run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,"
	" best_run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,"
	" result TEXT);"
	"CREATE TABLE IF NOT EXISTS sweep_runs("
	" sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,"
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" PRIMARY KEY(sweep_id, run_id)) WITHOUT ROWID;";

/* What schema 2 adds to a schema 1 file.  Rows stored twice under schema 1
 * (the same setting run again) keep their data; only the newest gets the
 * setting key, the others keep NULL, so the unique index holds. */
static const char migrate_1_2_sql[] =
	"ALTER TABLE runs ADD COLUMN capacity_bytes INTEGER;"
	"ALTER TABLE runs ADD COLUMN setting_key TEXT;"
	"UPDATE runs SET setting_key = kind || '|' || trace_hash || '|' ||"
	" policy || '|' || params || '|' || cap_bytes || '|' ||"
	" coalesce(addresses, 'model') || '|' WHERE id IN"
	" (SELECT max(id) FROM runs GROUP BY kind, trace_hash, policy, params,"
	"  cap_bytes, coalesce(addresses, 'model'));";

/* What schema 3 adds: the strategies of generated and transformed
 * traces (NULL for the runs before, which had none). */
static const char migrate_2_3_sql[] =
	"ALTER TABLE runs ADD COLUMN strategy TEXT;";

static const char index_sql[] =
	"CREATE UNIQUE INDEX IF NOT EXISTS runs_setting_key ON runs(setting_key)"
	" WHERE setting_key IS NOT NULL;"
	"CREATE INDEX IF NOT EXISTS runs_trace ON runs(trace_hash, policy);"
	"CREATE INDEX IF NOT EXISTS sweep_runs_run ON sweep_runs(run_id);";

static double
db_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Waits for another writer's lock.  SQLite's own busy timeout sleeps in
 * steps of up to 100 ms; sweep workers hold the lock for about a
 * millisecond per run, so short sleeps keep them from idling.
 */
static int
db_busy(void *ctx, int count)
{
	msim_db_t *db = ctx;
	double now = db_now_ms();
	if (count == 0)
		db->busy_t0 = now;
	if (now - db->busy_t0 >= db->busy_ms)
		return 0;
	struct timespec ts = {0, (count < 20 ? 100 + 50 * count : 2000) *
				     1000L};
	nanosleep(&ts, NULL);
	return 1;
}

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

static int db_open(const char *path, int create, msim_db_t **out, char *why,
		   size_t whylen);

void
msim_sim_meta_fill(msim_sim_meta_t *m, double device_us,
		   const char *calibration, const msim_summary_t *sum)
{
	snprintf(m->ms, sizeof(m->ms), "%.3f", device_us / 1000.0);
	snprintf(m->same, sizeof(m->same), "%llu",
		 (unsigned long long)sum->addr_same);
	snprintf(m->other, sizeof(m->other), "%llu",
		 (unsigned long long)sum->addr_other);
	const char *kv[9] = {"modelled_device_ms", m->ms, "calibration",
			     calibration, "addr_same", m->same, "addr_other",
			     m->other, NULL};
	memcpy(m->kv, kv, sizeof(kv));
}

int
msim_db_open(const char *path, msim_db_t **out, char *why, size_t whylen)
{
	return db_open(path, 1, out, why, whylen);
}

int
msim_db_open_existing(const char *path, msim_db_t **out, char *why,
		      size_t whylen)
{
	if (access(path, F_OK)) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_ENOTFOUND;
	}
	return db_open(path, 0, out, why, whylen);
}

struct sqlite3 *
msim_db_handle(msim_db_t *db)
{
	return db->db;
}

static int
db_open(const char *path, int create, msim_db_t **out, char *why,
	size_t whylen)
{
	msim_db_t *db = calloc(1, sizeof(*db));
	if (!db || !(db->path = strdup(path))) {
		free(db);
		snprintf(why, whylen, "%s: %s", path, msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	int rc = MSIM_EDB;
	if (sqlite3_open_v2(path, &db->db,
			    SQLITE_OPEN_READWRITE |
				    (create ? SQLITE_OPEN_CREATE : 0),
			    NULL) != SQLITE_OK) {
		db_fail(db, "cannot open");
		goto fail;
	}
	const char *busy = getenv("MEMSIM_DB_BUSY_MS");
	db->busy_ms = busy && *busy ? atoi(busy) : 10000;
	sqlite3_busy_handler(db->db, db_busy, db);
	sqlite3_extended_result_codes(db->db, 1);
	/* WAL lets readers and several writers share the file; where the file
	 * system cannot do WAL, SQLite keeps its rollback journal. */
	sqlite3_exec(db->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
	/* In WAL mode, NORMAL still survives a killed process whole (a
	 * committed run stays); only a power cut may lose the last runs, and
	 * it saves an fsync per run, which is most of a sweep's time on
	 * small traces. */
	sqlite3_exec(db->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
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
			  "INSERT INTO meta VALUES('schema_version','"
			  MSIM_STR(MSIM_DB_SCHEMA_VERSION) "'),"
			  "('created_by','memsim " PACKAGE_VERSION "')",
			  "cannot write the schema version")))
		goto rollback;
	if (have == 1 &&
	    ((rc = db_exec(db, migrate_1_2_sql,
			   "cannot migrate schema 1 to 2")) ||
	     (rc = db_exec(db, "UPDATE meta SET value='2' WHERE "
			   "key='schema_version'",
			   "cannot write the schema version"))))
		goto rollback;
	if (have >= 1 && have <= 2 &&
	    ((rc = db_exec(db, migrate_2_3_sql,
			   "cannot migrate schema 2 to 3")) ||
	     (rc = db_exec(db, "UPDATE meta SET value='3' WHERE "
			   "key='schema_version'",
			   "cannot write the schema version"))))
		goto rollback;
	/* Schema 4 only adds the table peak_blocks, made above. */
	if (have >= 1 && have <= 3 &&
	    (rc = db_exec(db, "UPDATE meta SET value='4' WHERE "
			  "key='schema_version'",
			  "cannot write the schema version")))
		goto rollback;
	if ((rc = db_exec(db, index_sql, "cannot create the indexes")))
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

/* Records that run_id belongs to sweep_id (none when sweep_id is 0). */
static int
db_sweep_member(msim_db_t *db, int64_t sweep_id, int64_t run_id)
{
	if (sweep_id <= 0)
		return 0;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, "INSERT OR IGNORE INTO sweep_runs "
			       "VALUES(?,?)", -1, &q, NULL) != SQLITE_OK)
		return db_fail(db, "cannot record the sweep's run");
	sqlite3_bind_int64(q, 1, sweep_id);
	sqlite3_bind_int64(q, 2, run_id);
	int rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : db_fail(db, "cannot record the "
					       "sweep's run");
}

/* Looks up the run stored under key: 1 with its id, 0, or MSIM_EDB. */
static int
db_find_key(msim_db_t *db, const char *key, int64_t *id_out)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, "SELECT id FROM runs WHERE "
			       "setting_key=?", -1, &q, NULL) != SQLITE_OK)
		return db_fail(db, "cannot look up the setting");
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*id_out = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(db, "cannot look up the setting");
	return rc == SQLITE_ROW;
}

int
msim_db_find_run(msim_db_t *db, const char *key, int64_t *run_id_out)
{
	int64_t id = -1;
	int rc = db_find_key(db, key, &id);
	if (rc < 0)
		return rc;
	*run_id_out = id;
	return rc ? 0 : MSIM_ENOTFOUND;
}

size_t
msim_db_setting_key(const msim_run_info_t *info, char *buf, size_t n)
{
	char extra[512] = "";
	int k = 0;
	if (info->capacity_bytes && info->capacity_bytes != MSIM_H200_BYTES)
		k = snprintf(extra, sizeof(extra), "capacity=%llu",
			     (unsigned long long)info->capacity_bytes);
	if (info->strategy && *info->strategy && k >= 0 &&
	    (size_t)k < sizeof(extra))
		k += snprintf(extra + k, sizeof(extra) - k, "%sstrategy=%s",
			      k ? ";" : "", info->strategy);
	if (info->replay && *info->replay && k >= 0 &&
	    (size_t)k < sizeof(extra))
		snprintf(extra + k, sizeof(extra) - k, "%sreplay=%s",
			 k ? ";" : "", info->replay);
	int len = snprintf(buf, n, "%s|%s|%s|%s|%llu|%s|%s",
			   info->kind ? info->kind : "simulated",
			   info->trace_hash ? info->trace_hash : "",
			   info->policy ? info->policy : "",
			   info->params ? info->params : "",
			   (unsigned long long)info->cap_bytes,
			   info->addresses ? info->addresses : "model", extra);
	return len < 0 ? 0 : (size_t)len;
}

int
msim_db_store_run(msim_db_t *db, const msim_run_info_t *info,
		  const msim_summary_t *sum, const msim_stats_t *st,
		  const msim_timeline_t *tl, const msim_seg_event_t *events,
		  size_t nevents, int64_t *run_id_out)
{
	int existed;
	return msim_db_store_run_mode(db, info, sum, st, tl, events, nevents,
				      MSIM_DB_INSERT, run_id_out, &existed);
}

int
msim_db_store_run_mode(msim_db_t *db, const msim_run_info_t *info,
		       const msim_summary_t *sum, const msim_stats_t *st,
		       const msim_timeline_t *tl,
		       const msim_seg_event_t *events, size_t nevents, int mode,
		       int64_t *run_id_out, int *existed_out)
{
	sqlite3_stmt *q = NULL;
	int rc;
	char key[2048];
	*existed_out = 0;
	if (mode != MSIM_DB_INSERT &&
	    msim_db_setting_key(info, key, sizeof(key)) >= sizeof(key)) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: the setting is "
			 "too long to store", db->path);
		return MSIM_EINVAL;
	}
	if ((rc = db_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		return rc;
	int64_t old_id = -1;
	if (mode != MSIM_DB_INSERT) {
		if ((rc = db_find_key(db, key, &old_id)) < 0)
			goto rollback;
		*existed_out = rc;
		if (rc && mode == MSIM_DB_SKIP) {
			if ((rc = db_sweep_member(db, info->sweep_id, old_id)) ||
			    (rc = db_exec(db, "COMMIT", "cannot commit")))
				goto rollback;
			*run_id_out = old_id;
			return 0;
		}
		/* A replaced run keeps its id (and its sweeps); its rows of
		 * results are written anew. */
		if (rc) {
			static const char *const del[] = {
				"DELETE FROM stats WHERE run_id=?",
				"DELETE FROM timeline WHERE run_id=?",
				"DELETE FROM segment_events WHERE run_id=?",
				"DELETE FROM run_meta WHERE run_id=?",
				"DELETE FROM peak_blocks WHERE run_id=?",
			};
			for (size_t k = 0; k < sizeof(del) / sizeof(del[0]);
			     k++) {
				if (sqlite3_prepare_v2(db->db, del[k], -1, &q,
						       NULL) != SQLITE_OK)
					goto fail;
				sqlite3_bind_int64(q, 1, old_id);
				if (sqlite3_step(q) != SQLITE_DONE)
					goto fail;
				sqlite3_finalize(q);
				q = NULL;
			}
		}
	}
#define RUN_COLS								\
	"memsim_version, kind, trace_path, trace_hash, trace_format,"	\
	" policy, params, cap_bytes, addresses, requests, oom_request,"	\
	" peak_reserved_bytes, peak_allocated_bytes,"			\
	" peak_requested_bytes, frag_at_peak, frag_mean, ext_frag_max,"	\
	" num_device_alloc, num_device_free, num_alloc_retries,"	\
	" num_ooms, sim_time_ns, wall_ms, capacity_bytes, setting_key,"	\
	" strategy"
#define RUN_VALS "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?"
	/* A replaced run keeps its id, so sweeps and users' notes that
	 * name it stay true. */
	const char *run_sql = old_id >= 0
		? "UPDATE runs SET (" RUN_COLS ") = (" RUN_VALS "), created ="
		  " strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id=?"
		: "INSERT INTO runs(" RUN_COLS ", id) VALUES(" RUN_VALS ",?)";
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
	if (info->capacity_bytes)
		sqlite3_bind_int64(q, i++,
				   (sqlite3_int64)info->capacity_bytes);
	else
		sqlite3_bind_null(q, i++);
	if (mode != MSIM_DB_INSERT)
		sqlite3_bind_text(q, i++, key, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, i++);
	if (info->strategy && *info->strategy)
		sqlite3_bind_text(q, i++, info->strategy, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, i++);
	if (old_id >= 0)
		sqlite3_bind_int64(q, i++, old_id);
	else
		sqlite3_bind_null(q, i++);
	if (sqlite3_step(q) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(q);
	q = NULL;
	int64_t run_id = old_id >= 0 ? old_id
				     : sqlite3_last_insert_rowid(db->db);

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
	if (info->npeak_blocks) {
		static const char *const state_names[] = {"allocated", "free",
							  "pending"};
		if (sqlite3_prepare_v2(db->db, "INSERT OR REPLACE INTO "
				       "peak_blocks VALUES(?,?,?,?)", -1, &q,
				       NULL) != SQLITE_OK)
			goto fail;
		for (size_t k = 0; k < info->npeak_blocks; k++) {
			const msim_block_t *b = &info->peak_blocks[k];
			sqlite3_reset(q);
			sqlite3_bind_int64(q, 1, run_id);
			sqlite3_bind_int64(q, 2, (sqlite3_int64)b->addr);
			sqlite3_bind_int64(q, 3, (sqlite3_int64)b->size);
			sqlite3_bind_text(q, 4, state_names[b->state % 3], -1,
					  SQLITE_STATIC);
			if (sqlite3_step(q) != SQLITE_DONE)
				goto fail;
		}
		sqlite3_finalize(q);
		q = NULL;
	}
	if ((rc = db_sweep_member(db, info->sweep_id, run_id)))
		goto rollback;
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
msim_db_sweep_open(msim_db_t *db, const msim_sweep_row_t *row,
		   int64_t *sweep_id_out)
{
	sqlite3_stmt *q = NULL;
	int rc;
	if ((rc = db_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
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
		return db_exec(db, "COMMIT", "cannot commit");
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
	return db_exec(db, "COMMIT", "cannot commit");
fail:
	rc = db_fail(db, "cannot record the sweep");
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
		return db_fail(db, "cannot record the result");
	if (baseline_run_id >= 0)
		sqlite3_bind_int64(q, 1, baseline_run_id);
	if (best_run_id >= 0)
		sqlite3_bind_int64(q, 2, best_run_id);
	sqlite3_bind_text(q, 3, result, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, sweep_id);
	int rc = sqlite3_step(q);
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : db_fail(db, "cannot record the result");
}

int
msim_db_sweep_adopt(msim_db_t *db, int64_t sweep_id,
		    const char *const *keys, size_t n,
		    unsigned char *present_out)
{
	sqlite3_stmt *q = NULL, *m = NULL;
	int rc;
	if ((rc = db_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
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
	return db_exec(db, "COMMIT", "cannot commit");
fail:
	rc = db_fail(db, "cannot look up the settings");
	sqlite3_finalize(q);
	sqlite3_finalize(m);
	sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Runs one statement with up to two integer parameters; SQLITE_DONE or
 * SQLITE_ROW (then *v_out is the first column) or an error code. */
static int
db_step2(msim_db_t *db, const char *sql, int64_t a, int64_t b, int64_t *v_out)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, sql, -1, &q, NULL) != SQLITE_OK)
		return SQLITE_ERROR;
	int np = sqlite3_bind_parameter_count(q);
	if (np >= 1)
		sqlite3_bind_int64(q, 1, a);
	if (np >= 2)
		sqlite3_bind_int64(q, 2, b);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && v_out)
		*v_out = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return rc;
}

/* The setting key of a schema 1 row, as the migration computes it. */
#define V1_KEY_SQL							\
	"kind || '|' || trace_hash || '|' || policy || '|' || params ||"	\
	" '|' || cap_bytes || '|' || coalesce(addresses, 'model') || '|'"

int
msim_db_merge(msim_db_t *db, const char *src_path, int64_t *added_out,
	      int64_t *skipped_out)
{
	sqlite3_stmt *q = NULL, *runs = NULL;
	int rc;
	int64_t added = 0, skipped = 0;
	if (access(src_path, R_OK)) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", src_path,
			 strerror(errno));
		return MSIM_ENOTFOUND;
	}
	if (sqlite3_prepare_v2(db->db, "ATTACH DATABASE ? AS src", -1, &q,
			       NULL) != SQLITE_OK)
		return db_fail(db, "cannot attach");
	sqlite3_bind_text(q, 1, src_path, -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	sqlite3_finalize(q);
	q = NULL;
	if (rc != SQLITE_DONE) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", src_path,
			 sqlite3_errmsg(db->db));
		return MSIM_EDB;
	}
	int64_t version = 0;
	rc = db_step2(db, "SELECT CAST(value AS INTEGER) FROM src.meta"
		      " WHERE key='schema_version'", 0, 0, &version);
	if (rc != SQLITE_ROW || version < 1 ||
	    version > MSIM_DB_SCHEMA_VERSION) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", src_path,
			 rc == SQLITE_ROW ? "a schema version this memsim "
			 "does not know" : "not a memsim database");
		rc = MSIM_EDB;
		goto detach;
	}
	if ((rc = db_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		goto detach;
	rc = MSIM_EDB;
	if (db_exec(db, "CREATE TEMP TABLE IF NOT EXISTS merge_ids("
		    "src INTEGER PRIMARY KEY, dst INTEGER NOT NULL);"
		    "DELETE FROM merge_ids;", "cannot merge"))
		goto rollback;
	const char *keycol = version >= 2 ? "setting_key" : V1_KEY_SQL;
	const char *capcol = version >= 2 ? "capacity_bytes" : "NULL";
	const char *stratcol = version >= 3 ? "strategy" : "NULL";
	char sql[2048];
	snprintf(sql, sizeof(sql), "SELECT id, %s FROM src.runs ORDER BY id",
		 keycol);
	if (sqlite3_prepare_v2(db->db, sql, -1, &runs, NULL) != SQLITE_OK)
		goto fail;
	char ins[2048];
	snprintf(ins, sizeof(ins), "INSERT INTO main.runs(created, %s)"
		 " SELECT created, memsim_version, kind, trace_path,"
		 " trace_hash, trace_format, policy, params, cap_bytes,"
		 " addresses, requests, oom_request, peak_reserved_bytes,"
		 " peak_allocated_bytes, peak_requested_bytes, frag_at_peak,"
		 " frag_mean, ext_frag_max, num_device_alloc, num_device_free,"
		 " num_alloc_retries, num_ooms, sim_time_ns, wall_ms, %s, %s,"
		 " %s FROM src.runs WHERE id=?", RUN_COLS, capcol, keycol,
		 stratcol);
	/* run_meta came with validation mode: older files lack it. */
	bool has_meta = false;
	sqlite3_stmt *mq;
	if (sqlite3_prepare_v2(db->db, "SELECT 1 FROM src.sqlite_master WHERE"
			       " name='run_meta'", -1, &mq, NULL) == SQLITE_OK) {
		has_meta = sqlite3_step(mq) == SQLITE_ROW;
		sqlite3_finalize(mq);
	}
	bool has_blocks = false; /* schema 4 */
	if (sqlite3_prepare_v2(db->db, "SELECT 1 FROM src.sqlite_master WHERE"
			       " name='peak_blocks'", -1, &mq, NULL) == SQLITE_OK) {
		has_blocks = sqlite3_step(mq) == SQLITE_ROW;
		sqlite3_finalize(mq);
	}
	while ((rc = sqlite3_step(runs)) == SQLITE_ROW) {
		int64_t src_id = sqlite3_column_int64(runs, 0);
		const char *key = (const char *)sqlite3_column_text(runs, 1);
		if (!key) { /* an older duplicate of a schema 1 file */
			skipped++;
			continue;
		}
		int64_t dst_id;
		if ((rc = db_find_key(db, key, &dst_id)) < 0)
			goto rollback_rc;
		if (rc) {
			skipped++;
		} else {
			if (db_step2(db, ins, src_id, 0, NULL) != SQLITE_DONE)
				goto fail;
			dst_id = sqlite3_last_insert_rowid(db->db);
			static const char *const copy[] = {
				"INSERT INTO main.stats SELECT ?, name, value"
				" FROM src.stats WHERE run_id=?2",
				"INSERT INTO main.timeline SELECT ?,"
				" request, time_ns, allocated_bytes,"
				" reserved_bytes, active_bytes,"
				" requested_bytes, largest_free_bytes,"
				" free_bytes FROM src.timeline WHERE run_id=?2",
				"INSERT INTO main.segment_events SELECT ?,"
				" seq, request, action, addr, size FROM"
				" src.segment_events WHERE run_id=?2",
			};
			for (size_t k = 0; k < 3; k++)
				if (db_step2(db, copy[k], dst_id, src_id,
					     NULL) != SQLITE_DONE)
					goto fail;
			if (has_meta &&
			    db_step2(db, "INSERT INTO main.run_meta SELECT ?,"
				     " key, value FROM src.run_meta WHERE"
				     " run_id=?2", dst_id, src_id,
				     NULL) != SQLITE_DONE)
				goto fail;
			if (has_blocks &&
			    db_step2(db, "INSERT INTO main.peak_blocks SELECT"
				     " ?, addr, size, state FROM"
				     " src.peak_blocks WHERE run_id=?2", dst_id,
				     src_id, NULL) != SQLITE_DONE)
				goto fail;
			added++;
		}
		if (db_step2(db, "INSERT INTO merge_ids VALUES(?,?)", src_id,
			     dst_id, NULL) != SQLITE_DONE)
			goto fail;
	}
	if (rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(runs);
	runs = NULL;
	if (version >= 2) {
		/* Sweeps: the same sweep shard is one row; its runs are the
		 * union of what each file holds. */
		if (sqlite3_prepare_v2(db->db, "SELECT id, kind, spec, spec_hash,"
				       " seed, shard_index, shard_count,"
				       " settings, baseline_run_id, best_run_id,"
				       " result FROM src.sweeps ORDER BY id",
				       -1, &runs, NULL) != SQLITE_OK)
			goto fail;
		while ((rc = sqlite3_step(runs)) == SQLITE_ROW) {
			msim_sweep_row_t row = {
				.kind = (const char *)sqlite3_column_text(runs, 1),
				.spec = (const char *)sqlite3_column_text(runs, 2),
				.spec_hash = (const char *)sqlite3_column_text(runs, 3),
				.seed = sqlite3_column_type(runs, 4) == SQLITE_NULL
					? -1 : sqlite3_column_int64(runs, 4),
				.shard_index = sqlite3_column_int(runs, 5),
				.shard_count = sqlite3_column_int(runs, 6),
				.settings = sqlite3_column_int64(runs, 7),
			};
			int64_t src_sweep = sqlite3_column_int64(runs, 0);
			int64_t dst_sweep = -1;
			if (sqlite3_prepare_v2(db->db, "SELECT id FROM main.sweeps"
					       " WHERE kind=? AND spec_hash=? AND"
					       " shard_index=? AND shard_count=?",
					       -1, &q, NULL) != SQLITE_OK)
				goto fail;
			sqlite3_bind_text(q, 1, row.kind, -1, SQLITE_STATIC);
			sqlite3_bind_text(q, 2, row.spec_hash, -1,
					  SQLITE_STATIC);
			sqlite3_bind_int(q, 3, row.shard_index);
			sqlite3_bind_int(q, 4, row.shard_count);
			if ((rc = sqlite3_step(q)) == SQLITE_ROW)
				dst_sweep = sqlite3_column_int64(q, 0);
			sqlite3_finalize(q);
			q = NULL;
			if (rc != SQLITE_ROW && rc != SQLITE_DONE)
				goto fail;
			if (dst_sweep < 0) {
				if (db_step2(db, "INSERT INTO main.sweeps(created,"
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
					goto fail;
				dst_sweep = sqlite3_last_insert_rowid(db->db);
			}
			if (db_step2(db, "INSERT OR IGNORE INTO main.sweep_runs"
				     " SELECT ?, m.dst FROM src.sweep_runs s"
				     " JOIN merge_ids m ON m.src=s.run_id"
				     " WHERE s.sweep_id=?2", dst_sweep, src_sweep,
				     NULL) != SQLITE_DONE)
				goto fail;
		}
		if (rc != SQLITE_DONE)
			goto fail;
		sqlite3_finalize(runs);
		runs = NULL;
	}
	if ((rc = db_exec(db, "COMMIT", "cannot commit")))
		goto rollback_rc;
	sqlite3_exec(db->db, "DETACH DATABASE src", NULL, NULL, NULL);
	*added_out = added;
	*skipped_out = skipped;
	return 0;
fail:
	db_fail(db, "cannot merge");
rollback:
	rc = MSIM_EDB;
rollback_rc:
	sqlite3_finalize(q);
	sqlite3_finalize(runs);
	sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
detach:
	sqlite3_exec(db->db, "DETACH DATABASE src", NULL, NULL, NULL);
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
