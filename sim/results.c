/*
 * The SQLite results store of results.h: opening a file, its schema and
 * the migrations from older schemas, and the helpers the other parts
 * share (results_int.h).  The other concerns have a file each, SQLite
 * style: results_wal.c (the WAL's VFS and checkpoint policy),
 * results_write.c (storing a run), results_read.c (reading runs back),
 * results_merge.c (merge) and results_sweep.c (a sweep's bookkeeping).
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

/* How db_open() opens a file. */
enum { DB_CREATE, DB_EXISTING, DB_READONLY };

/* SQLite's application_id of a memsim database ("MSIM"), set with the
 * schema: `file` names it.  Files of schema 7 and older were made without
 * it and are told apart by their tables (db_check_owner()). */
#define DB_APP_ID 0x4d53494d

#define RUN_COL_SQL(name, json, type, sql, since, show, value) ", " #name " " sql
static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS meta("
	" key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS runs("
	" id INTEGER PRIMARY KEY,"
	" created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now'))"
	/* ", memsim_version TEXT NOT NULL, kind ..." (sim/results.h) */
	MSIM_RUN_COLUMNS(RUN_COL_SQL) ");"
	/* Schema 6: a run's timeline, segment events and blocks at peak as
	 * one row each, schema 7 its statistics too (msim_dbi_packed below);
	 * views of the old tables' names and columns read them as rows
	 * (views_sql). */
	"CREATE TABLE IF NOT EXISTS stats_packed("
	" run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	" data TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS timeline_packed("
	" run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	" data TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS segment_events_packed("
	" run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	" data TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS peak_blocks_packed("
	" run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	" data TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS run_meta("
	" run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL, value TEXT NOT NULL,"
	" PRIMARY KEY(run_id, key)) WITHOUT ROWID;"
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
	" PRIMARY KEY(sweep_id, run_id)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS sweep_failed("
	" sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,"
	" setting_key TEXT NOT NULL,"
	" created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),"
	" trace_path TEXT NOT NULL, policy TEXT NOT NULL, params TEXT NOT NULL,"
	" status TEXT NOT NULL, reason TEXT NOT NULL,"
	" PRIMARY KEY(sweep_id, setting_key)) WITHOUT ROWID;";

/* MSIM_RUN_COLUMNS as data (sim/results.h). */
const msim_db_col_t msim_db_run_cols[] = {
#define RUN_COL_DATA(name, json, type, sql, since, show, value)	\
	{#name, json, MSIM_COL_##type, sql, since, MSIM_COL_##show,	\
	 offsetof(msim_db_run_t, name)},
	MSIM_RUN_COLUMNS(RUN_COL_DATA)
#undef RUN_COL_DATA
};
const size_t msim_db_run_ncols =
	sizeof(msim_db_run_cols) / sizeof(msim_db_run_cols[0]);

bool
msim_db_col_nullable(const msim_db_col_t *col)
{
	return !strstr(col->sql, "NOT NULL");
}

void
msim_dbi_run_select(char *buf, size_t n, int version, const char *v1_key)
{
	size_t k = 0;
	for (size_t c = 0; c < msim_db_run_ncols && k < n; c++) {
		const msim_db_col_t *col = &msim_db_run_cols[c];
		const char *expr = version >= col->since ? col->name
				   : col->type == MSIM_COL_KEY && v1_key ? v1_key
				   : "NULL";
		k += (size_t)snprintf(buf + k, n - k, "%s%s", c ? ", " : "",
				      expr);
	}
}

/* The packed tables (results_int.h). */
const struct msim_dbi_packed_s msim_dbi_packed[DB_NPACKED] = {
	{"timeline", "request, time_ns, allocated_bytes, reserved_bytes,"
		     " active_bytes, requested_bytes, largest_free_bytes,"
		     " free_bytes", "request"},
	{"segment_events", "seq, request, action, addr, size", "seq"},
	{"peak_blocks", "addr, size, state", "addr"},
	{"stats", "name, value", "name"},
};

#define J(k) "json_extract(j.value,'$[" #k "]')"
static const char views_sql[] =
	"CREATE VIEW IF NOT EXISTS timeline(run_id, request, time_ns,"
	" allocated_bytes, reserved_bytes, active_bytes, requested_bytes,"
	" largest_free_bytes, free_bytes) AS SELECT p.run_id, " J(0) ", "
	J(1) ", " J(2) ", " J(3) ", " J(4) ", " J(5) ", " J(6) ", " J(7)
	" FROM timeline_packed p, json_each(p.data) j;"
	"CREATE VIEW IF NOT EXISTS segment_events(run_id, seq, request,"
	" action, addr, size) AS SELECT p.run_id, " J(0) ", " J(1) ", "
	J(2) ", " J(3) ", " J(4)
	" FROM segment_events_packed p, json_each(p.data) j;"
	"CREATE VIEW IF NOT EXISTS peak_blocks(run_id, addr, size, state) AS"
	" SELECT p.run_id, " J(0) ", " J(1) ", " J(2)
	" FROM peak_blocks_packed p, json_each(p.data) j;"
	"CREATE VIEW IF NOT EXISTS stats(run_id, name, value) AS"
	" SELECT p.run_id, " J(0) ", " J(1)
	" FROM stats_packed p, json_each(p.data) j;";
#undef J

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

/*
 * The migrations of an older file that are more than adding a column, in
 * order: what schema version to adds to a file of version to - 1 (a file
 * of any older version runs those above its own).  A column of runs that
 * a file lacks (sim/results.h's MSIM_RUN_COLUMNS: schema 3's strategy,
 * say) is added afterwards from its line of the list (db_add_columns()),
 * so a new column needs no entry here (docs/changing.md).
 */
static const struct db_migration_s {
	int to;
	const char *sql;
} db_migrations[] = {
	{2, migrate_1_2_sql},
};
#define DB_NMIGRATIONS (sizeof(db_migrations) / sizeof(db_migrations[0]))

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

int
msim_dbi_fail(msim_db_t *db, const char *what)
{
	snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s: %s", db->path, what,
		 db->db ? sqlite3_errmsg(db->db) : "cannot open");
	return MSIM_EDB;
}

int
msim_dbi_exec(msim_db_t *db, const char *sql, const char *what)
{
	if (sqlite3_exec(db->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return msim_dbi_fail(db, what);
	return 0;
}

/*
 * Foreign-key checks on the connection (on: as opened) or off.  Storing a
 * run switches them off: its rows of results reference the run written
 * first in the same transaction, so the checks (a seek into runs and a
 * cursor for every row, about a sixth of a row's cost) find nothing;
 * merge switches them back on.  Switching expires the prepared
 * statements, so it is done only when the state changes.  The schema's
 * REFERENCES ... ON DELETE CASCADE stay for whoever deletes runs with
 * checks on.  Outside a transaction only (SQLite ignores it inside).
 */
int
msim_dbi_fk(msim_db_t *db, bool on)
{
	if (db->fk_off != on)
		return 0;
	if (sqlite3_exec(db->db, on ? "PRAGMA foreign_keys=ON"
				    : "PRAGMA foreign_keys=OFF", NULL, NULL,
			 NULL) != SQLITE_OK)
		return msim_dbi_fail(db, "pragma");
	db->fk_off = !on;
	return 0;
}

static bool db_schema_holds(msim_db_t *db, const char *schema,
			    const char *name, bool tables_only);

/* Packs the rows of run src_id in schema's table (or view) of
 * msim_dbi_packed[k] into main's packed table as run dst_id (nothing when it
 * has none).  SQLITE_DONE or SQLite's error. */
int
msim_dbi_pack_rows(msim_db_t *db, size_t k, const char *schema, int64_t dst_id,
	     int64_t src_id)
{
	const struct msim_dbi_packed_s *t = &msim_dbi_packed[k];
	char sql[1024];
	/* An aggregate over an ordered subquery takes its rows in order
	 * (SQLite does not flatten it into the aggregate). */
	snprintf(sql, sizeof(sql), "INSERT INTO main.%s_packed SELECT r, d"
		 " FROM (SELECT ? AS r, json_group_array(json_array(%s)) AS d,"
		 " count(*) AS n FROM (SELECT %s FROM %s.%s WHERE run_id=?"
		 " ORDER BY %s)) WHERE n > 0", t->table, t->cols, t->cols,
		 schema, t->table, t->order);
	return msim_dbi_step2(db, sql, dst_id, src_id, NULL);
}

/* Whether main's runs table has column name. */
static bool
db_has_column(msim_db_t *db, const char *name)
{
	sqlite3_stmt *q;
	bool has = false;
	if (sqlite3_prepare_v2(db->db, "SELECT 1 FROM pragma_table_info('runs')"
			       " WHERE name=?", -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
		has = sqlite3_step(q) == SQLITE_ROW;
	}
	sqlite3_finalize(q);
	return has;
}

/* A file of schema have: each column of MSIM_RUN_COLUMNS newer than it
 * that its runs table lacks is added, as its line declares it (the rows
 * there read it as NULL, as a reader of the older file does).  0 or
 * MSIM_EDB. */
static int
db_add_columns(msim_db_t *db, int have)
{
	for (size_t c = 0; c < msim_db_run_ncols; c++) {
		const msim_db_col_t *col = &msim_db_run_cols[c];
		if (col->since <= have || db_has_column(db, col->name))
			continue;
		char sql[512], what[160];
		snprintf(sql, sizeof(sql), "ALTER TABLE runs ADD COLUMN %s %s",
			 col->name, col->sql);
		snprintf(what, sizeof(what), "cannot add the column %s of "
			 "schema %d", col->name, col->since);
		if (msim_dbi_exec(db, sql, what))
			return MSIM_EDB;
	}
	return 0;
}

/* Schema 6 and before to 7: each table of msim_dbi_packed that is still a
 * table becomes its packed table (no row is lost: a run's rows in their
 * order) and is dropped; views_sql then makes the views.  0 or MSIM_EDB. */
static int
db_pack_old(msim_db_t *db)
{
	for (size_t k = 0; k < DB_NPACKED; k++) {
		const char *table = msim_dbi_packed[k].table;
		if (!db_schema_holds(db, "main", table, true))
			continue;
		char sql[256];
		sqlite3_stmt *q;
		snprintf(sql, sizeof(sql), "SELECT DISTINCT run_id FROM"
			 " main.%s", table);
		if (sqlite3_prepare_v2(db->db, sql, -1, &q, NULL) != SQLITE_OK)
			return msim_dbi_fail(db, "cannot migrate to schema 7");
		int rc;
		while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(q, 0);
			if ((rc = msim_dbi_pack_rows(db, k, "main", id, id)) !=
			    SQLITE_DONE)
				break;
		}
		sqlite3_finalize(q);
		if (rc != SQLITE_DONE)
			return msim_dbi_fail(db, "cannot migrate to schema 7");
		snprintf(sql, sizeof(sql), "DROP TABLE main.%s", table);
		if (msim_dbi_exec(db, sql, "cannot migrate to schema 7"))
			return MSIM_EDB;
	}
	return 0;
}

static int db_open(const char *path, int how, msim_db_t **out, char *why,
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
	return db_open(path, DB_CREATE, out, why, whylen);
}

int
msim_db_open_existing(const char *path, msim_db_t **out, char *why,
		      size_t whylen)
{
	if (access(path, F_OK)) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_ENOTFOUND;
	}
	return db_open(path, DB_EXISTING, out, why, whylen);
}

int
msim_db_open_readonly(const char *path, msim_db_t **out, char *why,
		      size_t whylen)
{
	if (access(path, F_OK)) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return MSIM_ENOTFOUND;
	}
	return db_open(path, DB_READONLY, out, why, whylen);
}

/* Whether the folder a new database file goes into is there: SQLite's own
 * word for a missing one is "unable to open database file". */
static int
db_check_folder(msim_db_t *db, const char *path)
{
	if (!access(path, F_OK))
		return 0;
	const char *slash = strrchr(path, '/');
	if (!slash)
		return 0;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + (slash == path)),
		 path);
	struct stat sb;
	if (stat(dir, &sb)) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%.1000s: cannot create "
			 "the database: folder %.1000s: %s", path, dir,
			 strerror(errno));
		return MSIM_EDB;
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%.1000s: cannot create "
			 "the database: %.1000s is not a folder", path, dir);
		return MSIM_EDB;
	}
	return 0;
}

/* Whether schema ("main", or "src" when merging) holds name: a table,
 * or (tables_only false) a view. */
static bool
db_schema_holds(msim_db_t *db, const char *schema, const char *name,
		bool tables_only)
{
	char sql[128];
	sqlite3_stmt *q;
	bool has = false;
	snprintf(sql, sizeof(sql), "SELECT 1 FROM %s.sqlite_master WHERE "
		 "type IN ('table'%s) AND name=?", schema,
		 tables_only ? "" : ",'view'");
	if (sqlite3_prepare_v2(db->db, sql, -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
		has = sqlite3_step(q) == SQLITE_ROW;
	}
	sqlite3_finalize(q);
	return has;
}

/* Whether schema holds table (or view) name. */
bool
msim_dbi_schema_has(msim_db_t *db, const char *schema, const char *name)
{
	return db_schema_holds(db, schema, name, false);
}

/* Whether the file holds table name. */
static bool
db_has_table(msim_db_t *db, const char *name)
{
	return msim_dbi_schema_has(db, "main", name);
}

/* The schema version in meta: > 0, 0 when meta has none, or an SQLite
 * error code negated (no meta table: not a memsim file). */
static int
db_read_version(msim_db_t *db)
{
	sqlite3_stmt *q;
	int rc = sqlite3_prepare_v2(db->db, "SELECT value FROM meta WHERE "
				    "key='schema_version'", -1, &q, NULL);
	if (rc != SQLITE_OK)
		return -(rc ? rc : SQLITE_ERROR);
	rc = sqlite3_step(q);
	int have = rc == SQLITE_ROW ? sqlite3_column_int(q, 0) : 0;
	sqlite3_finalize(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -rc;
	return have;
}

/* The tables of an older file, and the version a reader sees. */
static void
db_note_tables(msim_db_t *db, int version)
{
	db->version = version;
	if (version == MSIM_DB_SCHEMA_VERSION && !db->readonly) {
		/* made by the schema's SQL, or seen by db_has_tables() */
		db->has_meta = db->has_blocks = db->has_sweeps = true;
		db->has_failed = true;
		return;
	}
	db->has_meta = db_has_table(db, "run_meta");
	db->has_blocks = db_has_table(db, "peak_blocks");
	db->has_sweeps = db_has_table(db, "sweeps");
	db->has_failed = db_has_table(db, "sweep_failed");
}

/* "file:PATH?QUERY" with the URI's special characters escaped. */
void
msim_dbi_uri(const char *path, const char *query, char *buf, size_t n)
{
	size_t k = (size_t)snprintf(buf, n, "file:");
	for (const char *p = path; *p && k + 4 < n; p++) {
		if (*p == '%' || *p == '?' || *p == '#')
			k += (size_t)snprintf(buf + k, n - k, "%%%02X",
					      (unsigned char)*p);
		else
			buf[k++] = *p;
	}
	snprintf(buf + k, n - k, "?%s", query);
}

/*
 * The read-only connection.  SQLite reads a WAL file through its -shm
 * index, which it creates beside the file; where the folder is read-only
 * too and none is there, the file is read as immutable (nobody can be
 * writing it then: nobody can make the -wal either).
 */
static int
db_open_ro(msim_db_t *db, const char *path)
{
	if (sqlite3_open_v2(path, &db->db, SQLITE_OPEN_READONLY |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		return msim_dbi_fail(db, "cannot open");
	sqlite3_busy_handler(db->db, db_busy, db);
	int v = db_read_version(db);
	if (v < 0 && ((-v & 0xff) == SQLITE_CANTOPEN ||
		      (-v & 0xff) == SQLITE_READONLY)) {
		char uri[8192];
		msim_dbi_uri(path, "immutable=1", uri, sizeof(uri));
		sqlite3_close(db->db);
		db->db = NULL;
		if (sqlite3_open_v2(uri, &db->db, SQLITE_OPEN_READONLY |
				    SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
				    NULL) != SQLITE_OK)
			return msim_dbi_fail(db, "cannot open");
		v = db_read_version(db);
	}
	if (v <= 0) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", path,
			 v < 0 && (-v & 0xff) != SQLITE_ERROR
				 ? sqlite3_errmsg(db->db)
				 : "not a memsim database");
		return MSIM_EDB;
	}
	if (v > MSIM_DB_SCHEMA_VERSION) {
		snprintf(db->errmsg, sizeof(db->errmsg),
			 "%s: schema version %d is newer than this memsim "
			 "understands (%d)", path, v, MSIM_DB_SCHEMA_VERSION);
		return MSIM_EDB;
	}
	db->readonly = true;
	db_note_tables(db, v);
	return 0;
}

/*
 * The stamp a file whose schema this memsim made (or brought up to date)
 * keeps in SQLite's user_version: a hash (FNV-1a, 31 bits, never 0) of
 * the schema version and of every statement that makes the schema, so a
 * file stamped by a memsim whose schema differs in any way is not taken
 * for current.  Reading it is one look at the file's header; running the
 * schema's SQL again (every CREATE ... IF NOT EXISTS, each parsed) cost a
 * sweep's workers about 1.8 M instructions a connection.
 */
static int
db_stamp(void)
{
	const char *part[] = {MSIM_STR(MSIM_DB_SCHEMA_VERSION), schema_sql,
			      views_sql, index_sql, MSIM_STR(DB_APP_ID)};
	uint32_t h = 2166136261u;
	for (size_t k = 0; k < sizeof(part) / sizeof(part[0]); k++)
		for (const char *p = part[k]; *p; p++)
			h = (h ^ (unsigned char)*p) * 16777619u;
	h &= 0x7fffffff;
	return h ? (int)h : 1;
}

/* Whether the file's user_version is this memsim's stamp (db_stamp()). */
static bool
db_stamped(msim_db_t *db)
{
	sqlite3_stmt *q;
	bool same = false;
	if (sqlite3_prepare_v2(db->db, "PRAGMA user_version", -1, &q, NULL) ==
	    SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
		same = sqlite3_column_int(q, 0) == db_stamp();
	sqlite3_finalize(q);
	return same;
}

/* Whether the file holds every table, view and index the schema's SQL
 * makes (one look at sqlite_master): one dropped is made again. */
static bool
db_has_tables(msim_db_t *db)
{
	static const char sql[] =
		"SELECT count(*) FROM sqlite_master WHERE name IN ('meta',"
		"'runs','stats','timeline_packed','segment_events_packed',"
		"'peak_blocks_packed','stats_packed','run_meta','sweeps',"
		"'sweep_runs','sweep_failed','timeline','segment_events',"
		"'peak_blocks','runs_setting_key','runs_trace',"
		"'sweep_runs_run')";
	sqlite3_stmt *q;
	bool all = false;
	if (sqlite3_prepare_v2(db->db, sql, -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		all = sqlite3_column_int(q, 0) == 17;
	sqlite3_finalize(q);
	return all;
}

/* Whether the connection's journal is a WAL. */
static bool
db_in_wal(msim_db_t *db)
{
	sqlite3_stmt *q;
	bool wal = false;
	if (sqlite3_prepare_v2(db->db, "PRAGMA journal_mode", -1, &q,
			       NULL) == SQLITE_OK) {
		const unsigned char *m = sqlite3_step(q) == SQLITE_ROW ?
						 sqlite3_column_text(q, 0) : NULL;
		wal = m && !strcmp((const char *)m, "wal");
		sqlite3_finalize(q);
	}
	return wal;
}

/*
 * The end of making a new file (db_open()): the file, its header saying
 * WAL (page 1, written by the switch to WAL outside the WAL), is synced
 * once, since SQLite deletes the WAL of a database file that is empty on
 * the disk (pagerOpenWalIfPresent()): a WAL synced by a later checkpoint
 * would otherwise not survive a power cut.  Runs are then stored with
 * synchronous=NORMAL, as in a file that was there; the folder is synced
 * with the WAL at its first sync (SQLite's unixSync() of a file it
 * created).
 */
static int
db_fresh_sync(msim_db_t *db)
{
	sqlite3_exec(db->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
	const char *file = sqlite3_db_filename(db->db, "main");
	if (!file || !*file) /* in memory */
		return 0;
	/* Kept in db->ck_fd, closed after the connection: closing a
	 * descriptor of the file would drop the process's POSIX locks on
	 * it, the connection's shared lock among them, and another
	 * process's connection closing while this one still writes would
	 * then take itself for the last one and delete the WAL. */
	if (db->ck_fd < 0)
		db->ck_fd = open(file, O_RDONLY | O_CLOEXEC);
	if (db->ck_fd < 0 || fdatasync(db->ck_fd)) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%.1000s: cannot sync "
			 "the new database: %s", db->path, strerror(errno));
		return MSIM_EDB;
	}
	return 0;
}

/* The first column of a one-row statement as an int in *v_out; an SQLite
 * error code otherwise. */
static int
db_get_int(msim_db_t *db, const char *sql, int *v_out)
{
	sqlite3_stmt *q;
	int rc = sqlite3_prepare_v2(db->db, sql, -1, &q, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(q);
		if (rc == SQLITE_ROW) {
			*v_out = sqlite3_column_int(q, 0);
			rc = SQLITE_OK;
		} else if (rc == SQLITE_DONE) {
			*v_out = 0;
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(q);
	return rc;
}

/*
 * Whether the file at path, opened for writing and not new, is memsim's:
 * its application_id is memsim's, or it has none and holds nothing (no
 * table, view or index) or memsim's tables of an older schema (meta with
 * a schema_version, runs).  Another program's database is refused before
 * anything is written to it (no table made, no switch to WAL).
 */
static int
db_check_owner(msim_db_t *db, const char *path)
{
	int app, n;
	if (db_get_int(db, "PRAGMA application_id", &app) != SQLITE_OK)
		return msim_dbi_fail(db, "cannot open");
	if (app == DB_APP_ID)
		return 0;
	if (app) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%.1000s: not a "
			 "memsim database (SQLite application_id 0x%08x): "
			 "memsim writes only to its own files, give a new one",
			 path, (unsigned)app);
		return MSIM_EDB;
	}
	if (db_get_int(db, "SELECT count(*) FROM sqlite_master", &n) !=
	    SQLITE_OK)
		return msim_dbi_fail(db, "cannot open");
	if (!n || (db_read_version(db) > 0 && db_has_table(db, "runs")))
		return 0;
	char first[200] = "";
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db, "SELECT type, name FROM sqlite_master "
			       "ORDER BY rowid LIMIT 1", -1, &q, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		snprintf(first, sizeof(first), " (it holds %s '%.100s')",
			 (const char *)sqlite3_column_text(q, 0),
			 (const char *)sqlite3_column_text(q, 1));
	sqlite3_finalize(q);
	snprintf(db->errmsg, sizeof(db->errmsg), "%.1000s: not a memsim "
		 "database%s: memsim adds nothing to another program's "
		 "database, give a new file", path, first);
	return MSIM_EDB;
}

static int
db_open(const char *path, int how, msim_db_t **out, char *why,
	size_t whylen)
{
	msim_db_t *db = calloc(1, sizeof(*db));
	if (!db || !(db->path = strdup(path))) {
		free(db);
		snprintf(why, whylen, "%s: %s", path, msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	const char *busy = getenv("MEMSIM_DB_BUSY_MS");
	db->busy_ms = busy && *busy ? atoi(busy) : 10000;
	db->ck_fd = -1;
	int rc = MSIM_EDB;
	if (how == DB_READONLY) {
		if ((rc = db_open_ro(db, path)))
			goto fail;
		*out = db;
		return 0;
	}
	int create = how == DB_CREATE;
	if (create && (rc = db_check_folder(db, path)))
		goto fail;
	/* A file this call makes (none there, or empty): see below. */
	struct stat fsb;
	bool fresh = create && strncmp(path, "file:", 5) &&
		     (stat(path, &fsb) ? errno == ENOENT : fsb.st_size == 0);
	rc = MSIM_EDB;
	/* URIs: merge attaches its sources read-only ("file:...?mode=ro");
	 * a path without "file:" is a plain path still.  NOMUTEX: a
	 * connection is used by one thread at a time (like the msim_db_t
	 * around it, whose errmsg is not locked either), so SQLite's own
	 * per-call mutexes are pure cost (about 7% of a sweep setting). */
	if (sqlite3_open_v2(path, &db->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI |
				    SQLITE_OPEN_NOMUTEX |
				    (create ? SQLITE_OPEN_CREATE : 0),
			    msim_dbi_wal_vfs()) != SQLITE_OK) {
		msim_dbi_fail(db, "cannot open");
		goto fail;
	}
	sqlite3_busy_handler(db->db, db_busy, db);
	sqlite3_extended_result_codes(db->db, 1);
	if (!fresh && (rc = db_check_owner(db, path)))
		goto fail;
	rc = MSIM_EDB;
	/* A new file holds nothing to lose: it is made without syncs (no
	 * rollback journal for the switch to WAL, written in memory, no
	 * fdatasync of it, the file, the WAL's header or the folder: five
	 * fsyncs and an unlink, 5 to 7 ms of a sweep's serial part), and
	 * synced once, below, when its schema is in. */
	if (fresh) {
		sqlite3_exec(db->db, "PRAGMA synchronous=OFF", NULL, NULL, NULL);
		sqlite3_exec(db->db, "PRAGMA journal_mode=MEMORY", NULL, NULL,
			     NULL);
	}
	/* WAL lets readers and several writers share the file; where the file
	 * system cannot do WAL, SQLite keeps its rollback journal. */
	sqlite3_exec(db->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
	if (fresh && !db_in_wal(db))
		sqlite3_exec(db->db, "PRAGMA journal_mode=DELETE", NULL, NULL,
			     NULL);
	/* In WAL mode, NORMAL still survives a killed process whole (a
	 * committed run stays); only a power cut may lose the last runs, and
	 * it saves an fsync per run, which is most of a sweep's time on
	 * small traces. */
	if (!fresh)
		sqlite3_exec(db->db, "PRAGMA synchronous=NORMAL", NULL, NULL,
			     NULL);
	if ((rc = msim_dbi_exec(db, "PRAGMA foreign_keys=ON", "pragma")))
		goto fail;
	/* A file this memsim made or brought up to date, its version and
	 * tables as it left them (tests and older memsims edit them without
	 * knowing of the stamp): nothing to make. */
	if (db_stamped(db) &&
	    db_read_version(db) == MSIM_DB_SCHEMA_VERSION &&
	    db_has_tables(db)) {
		if (fresh && (rc = db_fresh_sync(db)))
			goto fail;
		db_note_tables(db, MSIM_DB_SCHEMA_VERSION);
		*out = db;
		return 0;
	}
	if ((rc = msim_dbi_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		goto fail;
	if ((rc = msim_dbi_exec(db, schema_sql, "cannot create the schema")))
		goto rollback;
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(db->db,
			       "SELECT value FROM meta WHERE key="
			       "'schema_version'", -1, &q, NULL) != SQLITE_OK) {
		rc = msim_dbi_fail(db, "cannot read the schema version");
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
	    (rc = msim_dbi_exec(db,
			  "INSERT INTO meta VALUES('schema_version','"
			  MSIM_STR(MSIM_DB_SCHEMA_VERSION) "'),"
			  "('created_by','memsim " PACKAGE_VERSION "')",
			  "cannot write the schema version")))
		goto rollback;
	/* An older file: each migration to a version above its own, in
	 * order, then the columns of runs it lacks (schema 3's strategy).
	 * Schema 4 only adds the table peak_blocks, schema 5 the table
	 * sweep_failed, both made above; schema 6 packs three tables,
	 * schema 7 a fourth (stats): db_pack_old(). */
	for (size_t k = 0; have >= 1 && k < DB_NMIGRATIONS; k++) {
		char what[64];
		snprintf(what, sizeof(what), "cannot migrate schema %d to %d",
			 db_migrations[k].to - 1, db_migrations[k].to);
		if (have < db_migrations[k].to &&
		    (rc = msim_dbi_exec(db, db_migrations[k].sql, what)))
			goto rollback;
	}
	if ((have >= 1 && (rc = db_add_columns(db, have))) ||
	    (rc = db_pack_old(db)) ||
	    (rc = msim_dbi_exec(db, views_sql, "cannot create the views")))
		goto rollback;
	if (have >= 1 && have < MSIM_DB_SCHEMA_VERSION &&
	    (rc = msim_dbi_exec(db, "UPDATE meta SET value='"
			  MSIM_STR(MSIM_DB_SCHEMA_VERSION) "' WHERE "
			  "key='schema_version'",
			  "cannot write the schema version")))
		goto rollback;
	if ((rc = msim_dbi_exec(db, index_sql, "cannot create the indexes")))
		goto rollback;
	char stamp[64];
	snprintf(stamp, sizeof(stamp), "PRAGMA application_id=%d; "
		 "PRAGMA user_version=%d", DB_APP_ID, db_stamp());
	if ((rc = msim_dbi_exec(db, stamp, "cannot write the schema version")))
		goto rollback;
	if ((rc = msim_dbi_exec(db, "COMMIT", "cannot commit")))
		goto rollback;
	if (fresh && (rc = db_fresh_sync(db)))
		goto fail;
	db_note_tables(db, MSIM_DB_SCHEMA_VERSION);
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
	for (size_t k = 0; k < DB_NPACKED; k++)
		sqlite3_finalize(db->packed[k]);
	for (size_t k = 0; k < 5; k++)
		sqlite3_finalize(db->q[k]);
	for (size_t k = 0; k < DB_NPACKED; k++)
		free(db->jb[k].p);
	free(db->stat_order);
	sqlite3_close(db->db);
	if (db->ck_fd >= 0)
		close(db->ck_fd);
	free(db->path);
	free(db);
}


const char *
msim_db_errmsg(const msim_db_t *db)
{
	return db->errmsg;
}

/* Runs one statement with up to two integer parameters; SQLITE_DONE or
 * SQLITE_ROW (then *v_out is the first column) or an error code. */
int
msim_dbi_step2(msim_db_t *db, const char *sql, int64_t a, int64_t b, int64_t *v_out)
{
	sqlite3_stmt *q;
	int prc = sqlite3_prepare_v2(db->db, sql, -1, &q, NULL);
	if (prc != SQLITE_OK)
		return prc;
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
