/* The SQLite results store of results.h. */
#define _GNU_SOURCE /* sync_file_range() (Linux) */
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
#include "sim/results.h"
#include "sim/grow.h"

#define MSIM_STR_(x) #x
#define MSIM_STR(x) MSIM_STR_(x)

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

/* How db_open() opens a file. */
enum { DB_CREATE, DB_EXISTING, DB_READONLY };

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
	/* Schema 6: a run's timeline, segment events and blocks at peak as
	 * one row each, schema 7 its statistics too (db_packed below);
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

/*
 * The tables of schema 5 (stats: 6) and before that schema 7 keeps packed:
 * each run's rows as one JSON array of rows, [[v1,v2,...],...], in the
 * order of `order` (a sweep setting stores about 2,700 rows: as rows,
 * SQLite's B-tree insert, uniqueness check and record making cost ~5k
 * instructions each, 80% of storing a setting; packed, one row of text).
 * The view of each name (views_sql) reads them as the rows they were, so
 * SQL that read the tables reads the views.  Older files are packed when
 * first opened for writing (db_pack_old()); read-only they are read as
 * they are.
 */
static const struct db_packed_s {
	const char *table; /* the view's name, the table's of schema 5 */
	const char *cols;  /* the columns of a row, in the array's order */
	const char *order; /* the order of a run's rows */
} db_packed[4] = {
	{"timeline", "request, time_ns, allocated_bytes, reserved_bytes,"
		     " active_bytes, requested_bytes, largest_free_bytes,"
		     " free_bytes", "request"},
	{"segment_events", "seq, request, action, addr, size", "seq"},
	{"peak_blocks", "addr, size, state", "addr"},
	{"stats", "name, value", "name"},
};
enum { DB_PACKED_TIMELINE, DB_PACKED_EVENTS, DB_PACKED_BLOCKS,
       DB_PACKED_STATS, DB_NPACKED };

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
static int
db_fk(msim_db_t *db, bool on)
{
	if (db->fk_off != on)
		return 0;
	if (sqlite3_exec(db->db, on ? "PRAGMA foreign_keys=ON"
				    : "PRAGMA foreign_keys=OFF", NULL, NULL,
			 NULL) != SQLITE_OK)
		return db_fail(db, "pragma");
	db->fk_off = !on;
	return 0;
}

static int db_step2(msim_db_t *db, const char *sql, int64_t a, int64_t b,
		    int64_t *v_out);
static bool db_schema_holds(msim_db_t *db, const char *schema,
			    const char *name, bool tables_only);

/* Packs the rows of run src_id in schema's table (or view) of
 * db_packed[k] into main's packed table as run dst_id (nothing when it
 * has none).  SQLITE_DONE or SQLite's error. */
static int
db_pack_rows(msim_db_t *db, size_t k, const char *schema, int64_t dst_id,
	     int64_t src_id)
{
	const struct db_packed_s *t = &db_packed[k];
	char sql[1024];
	/* An aggregate over an ordered subquery takes its rows in order
	 * (SQLite does not flatten it into the aggregate). */
	snprintf(sql, sizeof(sql), "INSERT INTO main.%s_packed SELECT r, d"
		 " FROM (SELECT ? AS r, json_group_array(json_array(%s)) AS d,"
		 " count(*) AS n FROM (SELECT %s FROM %s.%s WHERE run_id=?"
		 " ORDER BY %s)) WHERE n > 0", t->table, t->cols, t->cols,
		 schema, t->table, t->order);
	return db_step2(db, sql, dst_id, src_id, NULL);
}

/* Schema 6 and before to 7: each table of db_packed that is still a
 * table becomes its packed table (no row is lost: a run's rows in their
 * order) and is dropped; views_sql then makes the views.  0 or MSIM_EDB. */
static int
db_pack_old(msim_db_t *db)
{
	for (size_t k = 0; k < DB_NPACKED; k++) {
		const char *table = db_packed[k].table;
		if (!db_schema_holds(db, "main", table, true))
			continue;
		char sql[256];
		sqlite3_stmt *q;
		snprintf(sql, sizeof(sql), "SELECT DISTINCT run_id FROM"
			 " main.%s", table);
		if (sqlite3_prepare_v2(db->db, sql, -1, &q, NULL) != SQLITE_OK)
			return db_fail(db, "cannot migrate to schema 7");
		int rc;
		while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
			int64_t id = sqlite3_column_int64(q, 0);
			if ((rc = db_pack_rows(db, k, "main", id, id)) !=
			    SQLITE_DONE)
				break;
		}
		sqlite3_finalize(q);
		if (rc != SQLITE_DONE)
			return db_fail(db, "cannot migrate to schema 7");
		snprintf(sql, sizeof(sql), "DROP TABLE main.%s", table);
		if (db_exec(db, sql, "cannot migrate to schema 7"))
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
static bool
db_schema_has(msim_db_t *db, const char *schema, const char *name)
{
	return db_schema_holds(db, schema, name, false);
}

/* Whether the file holds table name. */
static bool
db_has_table(msim_db_t *db, const char *name)
{
	return db_schema_has(db, "main", name);
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
static void
db_uri(const char *path, const char *query, char *buf, size_t n)
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
		return db_fail(db, "cannot open");
	sqlite3_busy_handler(db->db, db_busy, db);
	int v = db_read_version(db);
	if (v < 0 && ((-v & 0xff) == SQLITE_CANTOPEN ||
		      (-v & 0xff) == SQLITE_READONLY)) {
		char uri[8192];
		db_uri(path, "immutable=1", uri, sizeof(uri));
		sqlite3_close(db->db);
		db->db = NULL;
		if (sqlite3_open_v2(uri, &db->db, SQLITE_OPEN_READONLY |
				    SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
				    NULL) != SQLITE_OK)
			return db_fail(db, "cannot open");
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
			      views_sql, index_sql};
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

/*
 * The VFS of connections that write: the default one, except that a WAL
 * file gathers the frames of a transaction and writes them with one
 * pwrite() instead of two a page (SQLite's walWriteOneFrame() writes a
 * frame's 24-byte header, then its page): a sweep's run is about 45
 * pages, so each commit made about 90 system calls while it held the
 * write lock that the other workers wait for.  The bytes and their order
 * are the same.  They reach the file as soon as the commit frame is
 * complete (a frame header whose database size, bytes 4 to 7, is not 0),
 * within SQLite's own write of it and before SQLite publishes the commit
 * in the -shm index (walIndexWriteHdr()): other connections never see a
 * frame that is not in the file, and an error writing them fails the
 * commit.  Any other call on the WAL (a read, a sync, its size, a write
 * elsewhere in it, closing it) writes what was gathered first.  Frames of
 * a transaction that does not commit (a spill of a large one) wait for
 * that next call, as they would wait in SQLite's cache.
 */
#define WB_FRAME_HDR 24           /* a WAL frame's header, in bytes */
#define WB_MAX ((size_t)1 << 20)  /* gathered at most before a write */
#define WB_CHUNK ((size_t)1 << 16) /* written a call (the unix VFS's
				    * seekAndWriteFd() takes less than
				    * 128 KiB) */

typedef struct walbuf_s {
	sqlite3_file base;    /* pMethods: &wb_methods */
	sqlite3_file *real;   /* the default VFS's file, right after this */
	unsigned char *p;     /* bytes gathered, to go at offset off */
	size_t n, cap;
	sqlite3_int64 off;
	bool commit;          /* the last frame header gathered commits */
} walbuf_t;

static sqlite3_vfs *wb_real; /* the default VFS */
static sqlite3_vfs wb_vfs;
static pthread_once_t wb_once = PTHREAD_ONCE_INIT;
static bool wb_ok;

static int
wb_flush(walbuf_t *f)
{
	int rc = SQLITE_OK;
	for (size_t k = 0; !rc && k < f->n; k += WB_CHUNK)
		rc = f->real->pMethods->xWrite(f->real, f->p + k,
			(int)(f->n - k < WB_CHUNK ? f->n - k : WB_CHUNK),
			f->off + (sqlite3_int64)k);
	f->n = 0;
	f->commit = false;
	return rc;
}

static int
wb_close(sqlite3_file *file)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	int rc2 = f->real->pMethods->xClose(f->real);
	free(f->p);
	f->p = NULL;
	return rc ? rc : rc2;
}

static int
wb_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 off)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xRead(f->real, buf, amt, off);
}

static int
wb_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 off)
{
	walbuf_t *f = (walbuf_t *)file;
	size_t k = (size_t)amt;
	int rc;
	if (f->n && (off != f->off + (sqlite3_int64)f->n || f->n + k > WB_MAX) &&
	    (rc = wb_flush(f)))
		return rc;
	if (f->n + k > f->cap) {
		size_t cap = f->cap ? f->cap : 64 << 10;
		while (cap < f->n + k && cap < WB_MAX)
			cap *= 2;
		unsigned char *p = cap >= f->n + k ? realloc(f->p, cap) : NULL;
		if (!p) {
			if ((rc = wb_flush(f)))
				return rc;
			return f->real->pMethods->xWrite(f->real, buf, amt,
							 off);
		}
		f->p = p;
		f->cap = cap;
	}
	if (!f->n)
		f->off = off;
	memcpy(f->p + f->n, buf, k);
	f->n += k;
	if (k == WB_FRAME_HDR) {
		const unsigned char *h = buf;
		f->commit = (h[4] | h[5] | h[6] | h[7]) != 0;
		return SQLITE_OK;
	}
	return f->commit ? wb_flush(f) : SQLITE_OK;
}

static int
wb_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xTruncate(f->real, size);
}

static int
wb_sync(sqlite3_file *file, int flags)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int
wb_size(sqlite3_file *file, sqlite3_int64 *size)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int
wb_lock(sqlite3_file *file, int level)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xLock(f->real, level);
}

static int
wb_unlock(sqlite3_file *file, int level)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xUnlock(f->real, level);
}

static int
wb_reserved(sqlite3_file *file, int *out)
{
	walbuf_t *f = (walbuf_t *)file;
	return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int
wb_control(sqlite3_file *file, int op, void *arg)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	return rc ? rc : f->real->pMethods->xFileControl(f->real, op, arg);
}

static int
wb_sector(sqlite3_file *file)
{
	walbuf_t *f = (walbuf_t *)file;
	return f->real->pMethods->xSectorSize(f->real);
}

static int
wb_device(sqlite3_file *file)
{
	walbuf_t *f = (walbuf_t *)file;
	return f->real->pMethods->xDeviceCharacteristics(f->real);
}

/* SQLite maps and locks the -shm index through the database's file, never
 * the WAL's; these only pass the calls on. */
static int
wb_shm_map(sqlite3_file *file, int pg, int pgsz, int extend,
	   void volatile **pp)
{
	walbuf_t *f = (walbuf_t *)file;
	if (f->real->pMethods->iVersion < 2)
		return SQLITE_IOERR;
	return f->real->pMethods->xShmMap(f->real, pg, pgsz, extend, pp);
}

static int
wb_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	if (rc || f->real->pMethods->iVersion < 2)
		return rc ? rc : SQLITE_IOERR;
	return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void
wb_shm_barrier(sqlite3_file *file)
{
	walbuf_t *f = (walbuf_t *)file;
	if (f->real->pMethods->iVersion >= 2)
		f->real->pMethods->xShmBarrier(f->real);
}

static int
wb_shm_unmap(sqlite3_file *file, int del)
{
	walbuf_t *f = (walbuf_t *)file;
	if (f->real->pMethods->iVersion < 2)
		return SQLITE_OK;
	return f->real->pMethods->xShmUnmap(f->real, del);
}

static int
wb_fetch(sqlite3_file *file, sqlite3_int64 off, int amt, void **pp)
{
	walbuf_t *f = (walbuf_t *)file;
	int rc = wb_flush(f);
	*pp = NULL;
	if (rc || f->real->pMethods->iVersion < 3)
		return rc;
	return f->real->pMethods->xFetch(f->real, off, amt, pp);
}

static int
wb_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
	walbuf_t *f = (walbuf_t *)file;
	if (f->real->pMethods->iVersion < 3)
		return SQLITE_OK;
	return f->real->pMethods->xUnfetch(f->real, off, p);
}

static const sqlite3_io_methods wb_methods = {
	.iVersion = 3, .xClose = wb_close, .xRead = wb_read,
	.xWrite = wb_write, .xTruncate = wb_truncate, .xSync = wb_sync,
	.xFileSize = wb_size, .xLock = wb_lock, .xUnlock = wb_unlock,
	.xCheckReservedLock = wb_reserved, .xFileControl = wb_control,
	.xSectorSize = wb_sector, .xDeviceCharacteristics = wb_device,
	.xShmMap = wb_shm_map, .xShmLock = wb_shm_lock,
	.xShmBarrier = wb_shm_barrier, .xShmUnmap = wb_shm_unmap,
	.xFetch = wb_fetch, .xUnfetch = wb_unfetch,
};

/* A WAL file gets a walbuf_t with the default VFS's file after it; any
 * other file is the default VFS's own, at the start of the same space. */
static int
wb_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags,
	int *out_flags)
{
	(void)vfs;
	if (!(flags & SQLITE_OPEN_WAL))
		return wb_real->xOpen(wb_real, name, file, flags, out_flags);
	walbuf_t *f = (walbuf_t *)file;
	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	f->real->pMethods = NULL;
	int rc = wb_real->xOpen(wb_real, name, f->real, flags, out_flags);
	/* Closed by SQLite, even if the open failed, once it has methods. */
	if (f->real->pMethods)
		f->base.pMethods = &wb_methods;
	return rc;
}

static void
wb_register(void)
{
	if (!(wb_real = sqlite3_vfs_find(NULL)))
		return;
	wb_vfs = *wb_real;
	wb_vfs.zName = "memsim-wal";
	wb_vfs.pNext = NULL;
	wb_vfs.szOsFile = (int)sizeof(walbuf_t) + wb_real->szOsFile;
	wb_vfs.xOpen = wb_open;
	wb_ok = sqlite3_vfs_register(&wb_vfs, 0) == SQLITE_OK;
}

/* The name of the VFS that gathers WAL frames; NULL (the default VFS)
 * where it could not be registered. */
static const char *
wb_name(void)
{
	pthread_once(&wb_once, wb_register);
	return wb_ok ? wb_vfs.zName : NULL;
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
			    wb_name()) != SQLITE_OK) {
		db_fail(db, "cannot open");
		goto fail;
	}
	sqlite3_busy_handler(db->db, db_busy, db);
	sqlite3_extended_result_codes(db->db, 1);
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
	if ((rc = db_exec(db, "PRAGMA foreign_keys=ON", "pragma")))
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
	/* Schema 4 only adds the table peak_blocks, schema 5 the table
	 * sweep_failed, both made above; schema 6 packs three tables,
	 * schema 7 a fourth (stats). */
	if ((rc = db_pack_old(db)) ||
	    (rc = db_exec(db, views_sql, "cannot create the views")))
		goto rollback;
	if (have >= 1 && have <= 6 &&
	    (rc = db_exec(db, "UPDATE meta SET value='"
			  MSIM_STR(MSIM_DB_SCHEMA_VERSION) "' WHERE "
			  "key='schema_version'",
			  "cannot write the schema version")))
		goto rollback;
	if ((rc = db_exec(db, index_sql, "cannot create the indexes")))
		goto rollback;
	char stamp[64];
	snprintf(stamp, sizeof(stamp), "PRAGMA user_version=%d", db_stamp());
	if ((rc = db_exec(db, stamp, "cannot write the schema version")))
		goto rollback;
	if ((rc = db_exec(db, "COMMIT", "cannot commit")))
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

void
msim_db_defer_checkpoints(msim_db_t *db)
{
	sqlite3_wal_autocheckpoint(db->db, 0);
}

void
msim_db_set_writer_lock(msim_db_t *db, void (*lock)(void *ctx),
			void (*unlock)(void *ctx), void *ctx)
{
	db->wlock = lock;
	db->wunlock = lock ? unlock : NULL;
	db->wctx = ctx;
}

void
msim_db_keep_wal(msim_db_t *db)
{
	sqlite3_db_config(db->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
}

int
msim_db_checkpoint(msim_db_t *db)
{
	int copied = 0;
	int rc = sqlite3_wal_checkpoint_v2(db->db, NULL,
					   SQLITE_CHECKPOINT_PASSIVE, NULL,
					   &copied);
	/* BUSY: another checkpoint is under way; the next call goes on. */
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		return db_fail(db, "cannot checkpoint");
#ifdef SYNC_FILE_RANGE_WRITE
	/* While writers keep committing, a PASSIVE checkpoint never finds
	 * the WAL wholly copied, and so never syncs the database: all the
	 * pages it copied would wait for the last connection's checkpoint
	 * (a sweep's end) to be written to the disk.  The kernel starts
	 * writing them now, without waiting for it (only a hint: its
	 * failure changes nothing). */
	if (rc == SQLITE_OK && copied > 0 && strncmp(db->path, "file:", 5)) {
		if (db->ck_fd < 0)
			db->ck_fd = open(db->path, O_RDONLY | O_CLOEXEC);
		if (db->ck_fd >= 0)
			sync_file_range(db->ck_fd, 0, 0,
					SYNC_FILE_RANGE_WRITE);
	}
#endif
	return 0;
}

int
msim_db_restart_wal(msim_db_t *db, bool truncate)
{
	/* What the PASSIVE checkpoints copied is synced first, while the
	 * writers go on (SQLite would sync it below, under the lock). */
	if (db->ck_fd < 0 && strncmp(db->path, "file:", 5))
		db->ck_fd = open(db->path, O_RDONLY | O_CLOEXEC);
	if (db->ck_fd >= 0)
		fdatasync(db->ck_fd);
	if (db->wlock)
		db->wlock(db->wctx);
	/* No writer holds the WAL's write lock now (our writers take the
	 * lock above first; others, SQLite's busy handler waits for), so the
	 * checkpoint copies the few frames committed since, syncs the WAL
	 * and the file, and starts the WAL over (walRestartHdr()). */
	int rc = sqlite3_wal_checkpoint_v2(db->db, NULL,
					   truncate ? SQLITE_CHECKPOINT_TRUNCATE :
						      SQLITE_CHECKPOINT_RESTART,
					   NULL, NULL);
	if (db->wunlock)
		db->wunlock(db->wctx);
	/* BUSY: a reader kept the WAL; a later call starts it over. */
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		return db_fail(db, "cannot checkpoint");
	return 0;
}

const char *
msim_db_errmsg(const msim_db_t *db)
{
	return db->errmsg;
}

/* The statistics of a run as rows, collected by msim_stats_foreach(). */
typedef struct stat_rows_s {
	size_t n, cap;
	struct stat_row_s {
		char name[96]; /* as msim_stats_foreach() makes them */
		int64_t value;
	} *v;
	bool nomem;
} stat_rows_t;

static void
stat_collect(const char *name, int64_t value, void *ctx)
{
	stat_rows_t *s = ctx;
	if (s->nomem)
		return;
	if (MSIM_GROW(s->v, s->cap, s->n + 1, 128)) {
		s->nomem = true;
		return;
	}
	size_t len = strlen(name);
	if (len >= sizeof(s->v[0].name))
		len = sizeof(s->v[0].name) - 1;
	memcpy(s->v[s->n].name, name, len);
	s->v[s->n].name[len] = '\0';
	s->v[s->n++].value = value;
}

/* The statements db_stmt() keeps prepared on a connection: a sweep's
 * worker stores a run every few milliseconds, and preparing them anew
 * each time was a twentieth of storing one. */
enum { DB_Q_FIND, DB_Q_MEMBER, DB_Q_META, DB_Q_RUN_INSERT, DB_Q_RUN_UPDATE };

/* db->q[slot], prepared from sql the first time; NULL if it cannot be.
 * The caller resets it (db_unstmt()) when done. */
static sqlite3_stmt *
db_stmt(msim_db_t *db, int slot, const char *sql)
{
	if (!db->q[slot] &&
	    sqlite3_prepare_v2(db->db, sql, -1, &db->q[slot], NULL) !=
		    SQLITE_OK) {
		sqlite3_finalize(db->q[slot]);
		db->q[slot] = NULL;
	}
	return db->q[slot];
}

/* Ends a use of a statement of db_stmt(). */
static void
db_unstmt(sqlite3_stmt *q)
{
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
}

/* Records that run_id belongs to sweep_id (none when sweep_id is 0). */
static int
db_sweep_member(msim_db_t *db, int64_t sweep_id, int64_t run_id)
{
	if (sweep_id <= 0)
		return 0;
	sqlite3_stmt *q = db_stmt(db, DB_Q_MEMBER, "INSERT OR IGNORE INTO"
				  " sweep_runs VALUES(?,?)");
	if (!q)
		return db_fail(db, "cannot record the sweep's run");
	sqlite3_bind_int64(q, 1, sweep_id);
	sqlite3_bind_int64(q, 2, run_id);
	int rc = sqlite3_step(q);
	db_unstmt(q);
	return rc == SQLITE_DONE ? 0 : db_fail(db, "cannot record the "
					       "sweep's run");
}

/* Looks up the run stored under key: 1 with its id, 0, or MSIM_EDB. */
static int
db_find_key(msim_db_t *db, const char *key, int64_t *id_out)
{
	sqlite3_stmt *q = db_stmt(db, DB_Q_FIND, "SELECT id FROM runs WHERE"
				  " setting_key=?");
	if (!q)
		return db_fail(db, "cannot look up the setting");
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*id_out = sqlite3_column_int64(q, 0);
	db_unstmt(q);
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
	if (info->context_bytes && k >= 0 && (size_t)k < sizeof(extra))
		k += snprintf(extra + k, sizeof(extra) - k, "%scontext=%llu",
			      k ? ";" : "",
			      (unsigned long long)info->context_bytes);
	if (info->strategy && *info->strategy && k >= 0 &&
	    (size_t)k < sizeof(extra))
		k += snprintf(extra + k, sizeof(extra) - k, "%sstrategy=%s",
			      k ? ";" : "", info->strategy);
	if (info->replay && *info->replay && k >= 0 &&
	    (size_t)k < sizeof(extra))
		k += snprintf(extra + k, sizeof(extra) - k, "%sreplay=%s",
			      k ? ";" : "", info->replay);
	if (info->device && k >= 0 && (size_t)k < sizeof(extra))
		snprintf(extra + k, sizeof(extra) - k, "%sdevice=%u",
			 k ? ";" : "", (unsigned)info->device);
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

/* Deletes the rows of results of a run that keeps its id (replaced). */
static int
db_clear_run(msim_db_t *db, int64_t run_id)
{
	static const char *const del[] = {
		"DELETE FROM stats_packed WHERE run_id=?",
		"DELETE FROM timeline_packed WHERE run_id=?",
		"DELETE FROM segment_events_packed WHERE run_id=?",
		"DELETE FROM run_meta WHERE run_id=?",
		"DELETE FROM peak_blocks_packed WHERE run_id=?",
	};
	for (size_t k = 0; k < sizeof(del) / sizeof(del[0]); k++) {
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(db->db, del[k], -1, &q, NULL) !=
		    SQLITE_OK)
			return MSIM_EDB;
		sqlite3_bind_int64(q, 1, run_id);
		int rc = sqlite3_step(q);
		sqlite3_finalize(q);
		if (rc != SQLITE_DONE)
			return MSIM_EDB;
	}
	return 0;
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

/*
 * The row of runs: a new one (old_id < 0), or old_id's updated.  key NULL:
 * stored without a setting key.  Returns 0 with the run's id or MSIM_EDB.
 */
static int
db_put_run(msim_db_t *db, const msim_run_info_t *info,
	   const msim_summary_t *sum, const msim_stats_t *st,
	   const char *key, int64_t old_id, int64_t *run_id_out)
{
	/* A replaced run keeps its id, so sweeps and users' notes that
	 * name it stay true. */
	const char *run_sql = old_id >= 0
		? "UPDATE runs SET (" RUN_COLS ") = (" RUN_VALS "), created ="
		  " strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id=?"
		: "INSERT INTO runs(" RUN_COLS ", id) VALUES(" RUN_VALS ",?)";
	sqlite3_stmt *q = db_stmt(db, old_id >= 0 ? DB_Q_RUN_UPDATE
						   : DB_Q_RUN_INSERT, run_sql);
	if (!q)
		return MSIM_EDB;
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
	if (key)
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
	int rc = sqlite3_step(q);
	db_unstmt(q);
	if (rc != SQLITE_DONE)
		return MSIM_EDB;
	*run_id_out = old_id >= 0 ? old_id : sqlite3_last_insert_rowid(db->db);
	return 0;
}

typedef struct run_rows_s {
	int64_t run_id;
	const void *v;
} run_rows_t;

/* A growing text of db_put_packed() (msim_db_t's jb). */
typedef struct jbuf_s jbuf_t;

/* Room for need more bytes in b: false when out of memory. */
static bool
jb_room(jbuf_t *b, size_t need)
{
	if (b->nomem)
		return false;
	if (b->n + need <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->n + need)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->nomem = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

/* Two decimal digits a pair, "00" to "99". */
static const char jb_pairs[201] =
	"00010203040506070809101112131415161718192021222324"
	"25262728293031323334353637383940414243444546474849"
	"50515253545556575859606162636465666768697071727374"
	"75767778798081828384858687888990919293949596979899";

/* The 8 digits of c (< 10^8), leading zeros kept, ending at e. */
static inline void
jb_eight(char *e, uint32_t c)
{
	uint32_t hi = c / 10000, lo = c % 10000;
	memcpy(e - 8, jb_pairs + hi / 100 * 2, 2);
	memcpy(e - 6, jb_pairs + hi % 100 * 2, 2);
	memcpy(e - 4, jb_pairs + lo / 100 * 2, 2);
	memcpy(e - 2, jb_pairs + lo % 100 * 2, 2);
}

/* Appends v in decimal, as SQLite's json_array() writes an integer: eight
 * digits a 64-bit division, then two a step in 32 bits (a table of the
 * pairs), most of the cost of packing. */
static void
jb_int(jbuf_t *b, int64_t v)
{
	char *p = b->p + b->n;
	uint64_t u = v;
	if (v < 0) {
		*p++ = '-';
		u = 0 - (uint64_t)v;
	}
	/* Its digits: floor(log10) from the highest bit (Bit Twiddling
	 * Hacks' IntegerLog10), corrected by one comparison; u | 1 has
	 * the same digits (no power of ten above 1 is odd). */
	static const uint64_t pow10[20] = {
		1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL,
		10000000ULL, 100000000ULL, 1000000000ULL, 10000000000ULL,
		100000000000ULL, 1000000000000ULL, 10000000000000ULL,
		100000000000000ULL, 1000000000000000ULL,
		10000000000000000ULL, 100000000000000000ULL,
		1000000000000000000ULL, 10000000000000000000ULL};
	unsigned t = (unsigned)(64 - __builtin_clzll(u | 1)) * 1233 >> 12;
	size_t len = t - ((u | 1) < pow10[t]) + 1;
	char *e = p + len;
	b->n = (size_t)(e - b->p);
	while (u >= 100000000) {
		uint64_t q = u / 100000000;
		jb_eight(e, (uint32_t)(u - q * 100000000));
		e -= 8;
		u = q;
	}
	uint32_t w = (uint32_t)u;
	while (w >= 100) {
		uint32_t d = w % 100 * 2;
		w /= 100;
		e -= 2;
		memcpy(e, jb_pairs + d, 2);
	}
	if (w >= 10)
		memcpy(e - 2, jb_pairs + w * 2, 2);
	else
		e[-1] = (char)('0' + w);
}

/* Appends ncols values (ints; the string name[c] where name is given and
 * name[c] not NULL: a plain word of at most 24 bytes) as one row,
 * "[v,v,...]", a comma first unless it is the first. */
static void
jb_row(jbuf_t *b, const int64_t *v, const char *const *name, int ncols)
{
	if (!jb_room(b, 2 + (size_t)ncols * 27))
		return;
	char *p = b->p;
	size_t n = b->n;
	if (n > 1)
		p[n++] = ',';
	p[n++] = '[';
	for (int c = 0; c < ncols; c++) {
		if (c)
			p[n++] = ',';
		if (name && name[c]) {
			size_t len = strnlen(name[c], 24);
			p[n++] = '"';
			memcpy(p + n, name[c], len);
			n += len;
			p[n++] = '"';
		} else {
			b->n = n;
			jb_int(b, v[c]);
			n = b->n;
		}
	}
	p[n++] = ']';
	b->n = n;
}

/* Ends db->jb[k], "[" and rows so far: 0 or MSIM_EDB. */
static int
jb_end(jbuf_t *b)
{
	if (b->nomem || !jb_room(b, 1))
		return MSIM_EDB;
	b->p[b->n++] = ']';
	return 0;
}

/* Stores db->jb[k] (if it holds rows) as run_id's row of db_packed[k]'s
 * table.  The names a row holds are plain words (no JSON escapes).  0 or
 * MSIM_EDB. */
static int
db_put_packed(msim_db_t *db, size_t k, int64_t run_id)
{
	const jbuf_t *b = &db->jb[k];
	if (!b->n)
		return 0;
	sqlite3_stmt **q = &db->packed[k];
	if (!*q) {
		char sql[128];
		snprintf(sql, sizeof(sql), "INSERT INTO %s_packed VALUES(?,?)",
			 db_packed[k].table);
		if (sqlite3_prepare_v2(db->db, sql, -1, q, NULL) != SQLITE_OK) {
			*q = NULL;
			return MSIM_EDB;
		}
	}
	sqlite3_bind_int64(*q, 1, run_id);
	sqlite3_bind_text(*q, 2, b->p, (int)b->n, SQLITE_STATIC);
	int rc = sqlite3_step(*q);
	sqlite3_reset(*q);
	sqlite3_clear_bindings(*q);
	return rc == SQLITE_DONE ? 0 : MSIM_EDB;
}

/* A value's decimal text, written already at off in a jbuf_t. */
typedef struct jb_span_s {
	int64_t v;
	size_t off, len;
} jb_span_t;

/* Appends v, the value of s, copying its text (24 bytes through a copy:
 * they may overlap; jb_row()'s room covers them). */
static inline void
jb_copy(jbuf_t *b, const jb_span_t *s)
{
	char w[24];
	memcpy(w, b->p + s->off, sizeof(w));
	memcpy(b->p + b->n, w, sizeof(w));
	b->n += s->len;
}

/* Appends v as jb_int() does and keeps where it went in s. */
static inline void
jb_int_span(jbuf_t *b, int64_t v, jb_span_t *s)
{
	s->v = v;
	s->off = b->n;
	jb_int(b, v);
	s->len = b->n - s->off;
}

/* The timeline of a run (tl may be NULL) into db->jb[], one array of
 * rows [request, time_ns, allocated, reserved, active, requested,
 * largest_free, free].  Reserved and the largest free block mostly stay
 * from one sample to the next (87% and 95% of gpt2_varlen's), and active
 * is allocated unless blocks wait for their stream: their text is copied
 * then, not written again (jb_int() is most of the cost of packing). */
static int
db_pack_timeline(msim_db_t *db, const msim_timeline_t *tl)
{
	jbuf_t *b = &db->jb[DB_PACKED_TIMELINE];
	b->n = 0;
	b->nomem = false;
	if (!tl || !tl->n)
		return 0;
	if (!jb_room(b, 1))
		return MSIM_EDB;
	b->p[b->n++] = '[';
	jb_span_t al, res = {0}, lf = {0};
	for (size_t i = 0; i < tl->n; i++) {
		const msim_sample_t *x = &tl->v[i];
		if (!jb_room(b, 2 + 8 * 27))
			return MSIM_EDB;
		if (i)
			b->p[b->n++] = ',';
		b->p[b->n++] = '[';
		jb_int(b, (int64_t)x->request);
		b->p[b->n++] = ',';
		jb_int(b, (int64_t)x->time);
		b->p[b->n++] = ',';
		jb_int_span(b, x->allocated, &al);
		b->p[b->n++] = ',';
		if (i && x->reserved == res.v)
			jb_copy(b, &res);
		else
			jb_int_span(b, x->reserved, &res);
		b->p[b->n++] = ',';
		if (x->active == x->allocated)
			jb_copy(b, &al);
		else
			jb_int(b, x->active);
		b->p[b->n++] = ',';
		jb_int(b, x->requested);
		b->p[b->n++] = ',';
		if (i && (int64_t)x->largest_free == lf.v)
			jb_copy(b, &lf);
		else
			jb_int_span(b, (int64_t)x->largest_free, &lf);
		b->p[b->n++] = ',';
		jb_int(b, (int64_t)x->free);
		b->p[b->n++] = ']';
	}
	return jb_end(b);
}

/* The segment events of a run into db->jb[], numbered from 0 in their
 * order: rows [seq, request, action, addr, size]. */
static int
db_pack_events(msim_db_t *db, const msim_seg_event_t *events, size_t nevents)
{
	jbuf_t *b = &db->jb[DB_PACKED_EVENTS];
	b->n = 0;
	b->nomem = false;
	if (!events || !nevents)
		return 0;
	if (!jb_room(b, 1))
		return MSIM_EDB;
	b->p[b->n++] = '[';
	for (size_t i = 0; i < nevents; i++) {
		const msim_seg_event_t *e = &events[i];
		int64_t v[5] = {(int64_t)i, (int64_t)e->request, 0,
			(int64_t)e->addr, (int64_t)e->size};
		const char *name[5] = {NULL, NULL,
			msim_seg_action_name(e->action), NULL, NULL};
		jb_row(b, v, name, 5);
	}
	return jb_end(b);
}

/* The run_meta of a run: key, value, ..., NULL (meta may be NULL). */
static int
db_put_meta(msim_db_t *db, int64_t run_id, const char *const *meta)
{
	if (!meta)
		return 0;
	sqlite3_stmt *q = db_stmt(db, DB_Q_META, "INSERT INTO run_meta"
				  " VALUES(?,?,?)");
	if (!q)
		return MSIM_EDB;
	int rc = SQLITE_DONE;
	for (const char *const *m = meta; m[0] && m[1] && rc == SQLITE_DONE;
	     m += 2) {
		sqlite3_reset(q);
		sqlite3_bind_int64(q, 1, run_id);
		sqlite3_bind_text(q, 2, m[0], -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 3, m[1], -1, SQLITE_STATIC);
		rc = sqlite3_step(q);
	}
	db_unstmt(q);
	return rc == SQLITE_DONE ? 0 : MSIM_EDB;
}

/*
 * The statistics of a run into db->jb[], rows ["name", value] by name, as
 * the table stats of schema 6 kept them (its key was run_id, name).
 * msim_stats_foreach() gives the same names in the same order each run:
 * their order by name is found once a connection and checked after.
 */
static int
db_pack_stats(msim_db_t *db, const stat_rows_t *sr)
{
	jbuf_t *b = &db->jb[DB_PACKED_STATS];
	b->n = 0;
	b->nomem = false;
	if (sr->nomem)
		return MSIM_EDB;
	if (!sr->n)
		return 0;
	uint16_t *o = db->stat_order;
	bool sorted = db->nstat_order == sr->n;
	for (size_t i = 1; sorted && i < sr->n; i++)
		sorted = strcmp(sr->v[o[i - 1]].name, sr->v[o[i]].name) < 0;
	if (!sorted) {
		if (sr->n > UINT16_MAX)
			return MSIM_EDB;
		free(db->stat_order);
		db->nstat_order = 0;
		if (!(o = db->stat_order = malloc(sr->n * sizeof(*o))))
			return MSIM_EDB;
		/* Insertion sort: once a connection, 122 names. */
		for (size_t i = 0; i < sr->n; i++) {
			size_t k = i;
			for (; k && strcmp(sr->v[o[k - 1]].name,
					   sr->v[i].name) > 0; k--)
				o[k] = o[k - 1];
			o[k] = (uint16_t)i;
		}
		db->nstat_order = sr->n;
	}
	if (!jb_room(b, 1))
		return MSIM_EDB;
	b->p[b->n++] = '[';
	for (size_t i = 0; i < sr->n; i++) {
		const struct stat_row_s *r = &sr->v[o[i]];
		size_t len = strlen(r->name);
		if (!jb_room(b, len + 32))
			return MSIM_EDB;
		char *p = b->p + b->n;
		if (i)
			*p++ = ',';
		*p++ = '[';
		*p++ = '"';
		memcpy(p, r->name, len);
		p += len;
		*p++ = '"';
		*p++ = ',';
		b->n = (size_t)(p - b->p);
		jb_int(b, r->value);
		b->p[b->n++] = ']';
	}
	return jb_end(b);
}

static const char *const block_states[] = {"allocated", "free", "pending"};

/* A block and its index in the input, ordered by address then index. */
typedef struct block_at_s {
	msim_block_t b;
	size_t i;
} block_at_t;

static bool
block_less(const block_at_t *x, const block_at_t *y)
{
	return x->b.addr < y->b.addr || (x->b.addr == y->b.addr && x->i < y->i);
}

/* Sorts v by address then index: a bottom-up merge sort (qsort's call a
 * comparison cost more than the rest of packing the blocks).  0, or
 * MSIM_ENOMEM. */
static int
block_sort(block_at_t *v, size_t n)
{
	block_at_t *tmp = malloc(n * sizeof(*tmp)), *src = v, *dst = tmp;
	if (!tmp)
		return MSIM_ENOMEM;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t a = lo, b = mid, k = lo;
			while (a < mid && b < hi)
				dst[k++] = block_less(&src[b], &src[a])
						   ? src[b++] : src[a++];
			while (a < mid)
				dst[k++] = src[a++];
			while (b < hi)
				dst[k++] = src[b++];
		}
		block_at_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	return 0;
}

/* The blocks at peak reserved of a run into db->jb[]: rows [addr, size,
 * state] by address (a repeated address: the last block given stays, as
 * when each was a row of the table keyed by address). */
static int
db_pack_peak_blocks(msim_db_t *db, const msim_block_t *blocks, size_t n)
{
	jbuf_t *b = &db->jb[DB_PACKED_BLOCKS];
	b->n = 0;
	b->nomem = false;
	if (!blocks || !n)
		return 0;
	msim_block_t *sorted = NULL;
	size_t i = 1;
	while (i < n && blocks[i - 1].addr < blocks[i].addr)
		i++;
	if (i < n) { /* not in address order (policies' order is theirs) */
		block_at_t *at = malloc(n * sizeof(*at));
		if (!at || !(sorted = malloc(n * sizeof(*sorted)))) {
			free(at);
			return MSIM_EDB;
		}
		for (size_t k = 0; k < n; k++)
			at[k] = (block_at_t){blocks[k], k};
		if (block_sort(at, n)) {
			free(at);
			free(sorted);
			return MSIM_EDB;
		}
		size_t w = 0;
		for (size_t k = 0; k < n; k++)
			if (k + 1 == n || at[k + 1].b.addr != at[k].b.addr)
				sorted[w++] = at[k].b;
		free(at);
		blocks = sorted;
		n = w;
	}
	int rc = MSIM_EDB;
	if (!jb_room(b, 1))
		goto out;
	b->p[b->n++] = '[';
	for (size_t k = 0; k < n; k++) {
		int64_t v[3] = {(int64_t)blocks[k].addr,
			(int64_t)blocks[k].size, 0};
		const char *name[3] = {NULL, NULL,
			block_states[blocks[k].state % 3]};
		jb_row(b, v, name, 3);
	}
	rc = jb_end(b);
out:
	free(sorted);
	return rc;
}

int
msim_db_store_run_mode(msim_db_t *db, const msim_run_info_t *info,
		       const msim_summary_t *sum, const msim_stats_t *st,
		       const msim_timeline_t *tl,
		       const msim_seg_event_t *events, size_t nevents, int mode,
		       int64_t *run_id_out, int *existed_out)
{
	int rc;
	char key[2048];
	*existed_out = 0;
	if (db->readonly) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: opened for "
			 "reading only", db->path);
		return MSIM_EDB;
	}
	if (mode != MSIM_DB_INSERT &&
	    msim_db_setting_key(info, key, sizeof(key)) >= sizeof(key)) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: the setting is "
			 "too long to store", db->path);
		return MSIM_EINVAL;
	}
	/* The rows made before the lock is taken, so that writers of a
	 * sweep hold it only while SQLite stores them. */
	stat_rows_t sr = {0};
	msim_stats_foreach(st, stat_collect, &sr);
	if (db_pack_stats(db, &sr) || db_pack_timeline(db, tl) ||
	    db_pack_events(db, events, nevents) ||
	    db_pack_peak_blocks(db, info->peak_blocks, info->npeak_blocks)) {
		free(sr.v);
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: cannot store "
			 "the run: %s", db->path, msim_strerror(MSIM_ENOMEM));
		return MSIM_EDB;
	}
	if ((rc = db_fk(db, false))) {
		free(sr.v);
		return rc;
	}
	if (db->wlock)
		db->wlock(db->wctx);
	if ((rc = db_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		goto out;
	int64_t old_id = -1, run_id;
	if (mode != MSIM_DB_INSERT) {
		if ((rc = db_find_key(db, key, &old_id)) < 0)
			goto rollback;
		*existed_out = rc;
		if (rc && mode == MSIM_DB_SKIP) {
			if ((rc = db_sweep_member(db, info->sweep_id, old_id)) ||
			    (rc = db_exec(db, "COMMIT", "cannot commit")))
				goto rollback;
			*run_id_out = old_id;
			goto out;
		}
		/* A replaced run keeps its id (and its sweeps); its rows of
		 * results are written anew. */
		if (rc && db_clear_run(db, old_id))
			goto fail;
		if (!rc)
			old_id = -1;
	}
	if (db_put_run(db, info, sum, st, mode != MSIM_DB_INSERT ? key : NULL,
		       old_id, &run_id) ||
	    db_put_packed(db, DB_PACKED_STATS, run_id) ||
	    db_put_packed(db, DB_PACKED_TIMELINE, run_id) ||
	    db_put_packed(db, DB_PACKED_EVENTS, run_id) ||
	    db_put_meta(db, run_id, info->meta) ||
	    db_put_packed(db, DB_PACKED_BLOCKS, run_id))
		goto fail;
	if ((rc = db_sweep_member(db, info->sweep_id, run_id)))
		goto rollback;
	if ((rc = db_exec(db, "COMMIT", "cannot commit")))
		goto rollback;
	*run_id_out = run_id;
	goto out;
fail:
	rc = db_fail(db, "cannot store the run");
rollback:
	sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
out:
	if (db->wunlock)
		db->wunlock(db->wctx);
	free(sr.v);
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
		return db_fail(db, "cannot store the failed setting");
	sqlite3_bind_int64(q, 1, sweep_id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, trace_path, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, policy, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 5, params, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 6, status, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 7, reason, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q) == SQLITE_DONE ? 0
		: db_fail(db, "cannot store the failed setting");
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
		return db_fail(db, "cannot forget the failed setting");
	sqlite3_bind_int64(q, 1, sweep_id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q) == SQLITE_DONE ? 0
		: db_fail(db, "cannot forget the failed setting");
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
		return db_fail(db, "cannot read the failed settings");
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
		: db_fail(db, "cannot read the failed settings");
	sqlite3_finalize(q);
	return rc;
}

/* Runs one statement with up to two integer parameters; SQLITE_DONE or
 * SQLITE_ROW (then *v_out is the first column) or an error code. */
static int
db_step2(msim_db_t *db, const char *sql, int64_t a, int64_t b, int64_t *v_out)
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

/* The setting key of a schema 1 row, as the migration computes it. */
#define V1_KEY_SQL							\
	"kind || '|' || trace_hash || '|' || policy || '|' || params ||"	\
	" '|' || cap_bytes || '|' || coalesce(addresses, 'model') || '|'"

/* Whether the attached file src holds table name. */
static bool
merge_src_has(msim_db_t *db, const char *name)
{
	return db_schema_has(db, "src", name);
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
		db_uri(src_path, modes[k], uri, sizeof(uri));
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
		rc = db_step2(db, "SELECT CAST(value AS INTEGER) FROM src.meta"
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
	const char *keycol = version >= 2 ? "setting_key" : V1_KEY_SQL;
	const char *capcol = version >= 2 ? "capacity_bytes" : "NULL";
	const char *stratcol = version >= 3 ? "strategy" : "NULL";
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
	if (db_step2(db, ins, src_id, 0, NULL) != SQLITE_DONE)
		return MSIM_EDB;
	*dst_id_out = sqlite3_last_insert_rowid(db->db);
	return 0;
}

/* The tables of a run's results, as merge copies them (?1 the new run id,
 * ?2 the source's); a table an older file lacks is skipped.  packed: the
 * index into db_packed of a table main keeps packed (sql NULL), whether
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
	return t->sql ? db_step2(db, t->sql, dst_id, src_id, NULL)
		      : db_pack_rows(db, (size_t)t->packed, "src", dst_id,
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
		return db_fail(db, "cannot merge");
	int rc;
	while ((rc = sqlite3_step(runs)) == SQLITE_ROW) {
		int64_t src_id = sqlite3_column_int64(runs, 0);
		const char *key = (const char *)sqlite3_column_text(runs, 1);
		if (!key) { /* an older duplicate of a schema 1 file */
			(*skipped)++;
			continue;
		}
		int64_t dst_id;
		if ((rc = db_find_key(db, key, &dst_id)) < 0)
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
		if (db_step2(db, "INSERT INTO merge_ids VALUES(?,?)", src_id,
			     dst_id, NULL) != SQLITE_DONE)
			break;
		rc = SQLITE_ROW;
	}
	if (rc != SQLITE_DONE && rc != MSIM_EDB)
		db_fail(db, "cannot merge");
	sqlite3_finalize(runs);
	return rc == SQLITE_DONE ? 0 : MSIM_EDB;
}

/* The sweep of main that is src's sweep src_sweep (same kind, spec_hash
 * and shard), made if main lacks it. */
static int
merge_sweep_row(msim_db_t *db, int64_t src_sweep, int64_t *dst_out)
{
	int64_t dst = -1;
	int rc = db_step2(db, "SELECT m.id FROM main.sweeps m JOIN src.sweeps s"
			  " ON m.kind=s.kind AND m.spec_hash=s.spec_hash AND"
			  " m.shard_index=s.shard_index AND"
			  " m.shard_count=s.shard_count WHERE s.id=?",
			  src_sweep, 0, &dst);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return MSIM_EDB;
	if (rc == SQLITE_DONE) {
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
		return db_fail(db, "cannot merge");
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t src_sweep = sqlite3_column_int64(q, 0), dst_sweep;
		if (merge_sweep_row(db, src_sweep, &dst_sweep) ||
		    db_step2(db, "INSERT OR IGNORE INTO main.sweep_runs"
			     " SELECT ?, m.dst FROM src.sweep_runs s"
			     " JOIN merge_ids m ON m.src=s.run_id"
			     " WHERE s.sweep_id=?2", dst_sweep, src_sweep,
			     NULL) != SQLITE_DONE ||
		    /* Its failed settings, but for those run in either. */
		    (failed &&
		     (db_step2(db, "INSERT OR IGNORE INTO main.sweep_failed"
			       " SELECT ?, setting_key, created, trace_path,"
			       " policy, params, status, reason"
			       " FROM src.sweep_failed WHERE sweep_id=?2",
			       dst_sweep, src_sweep, NULL) != SQLITE_DONE)) ||
		    db_step2(db, "DELETE FROM main.sweep_failed WHERE"
			     " sweep_id=? AND setting_key IN (SELECT"
			     " setting_key FROM main.runs WHERE setting_key"
			     " IS NOT NULL)", dst_sweep, 0, NULL)
		    != SQLITE_DONE) {
			rc = SQLITE_ERROR;
			break;
		}
	}
	if (rc != SQLITE_DONE)
		db_fail(db, "cannot merge");
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
	if ((rc = db_fk(db, true)) ||
	    (rc = merge_attach(db, src_path, &version)))
		return rc;
	if ((rc = db_exec(db, "BEGIN IMMEDIATE", "cannot lock")))
		goto detach;
	if ((rc = db_exec(db, "CREATE TEMP TABLE IF NOT EXISTS merge_ids("
			  "src INTEGER PRIMARY KEY, dst INTEGER NOT NULL);"
			  "DELETE FROM merge_ids;", "cannot merge")) ||
	    (rc = merge_runs(db, version, &added, &skipped)) ||
	    (version >= 2 && (rc = merge_sweeps(db))) ||
	    (rc = db_exec(db, "COMMIT", "cannot commit"))) {
		sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
		goto detach;
	}
	*added_out = added;
	*skipped_out = skipped;
detach:
	sqlite3_exec(db->db, "DETACH DATABASE src", NULL, NULL, NULL);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */

/* Prepares sql, or fills db->errmsg: 0 or MSIM_EDB. */
static int
db_prepare(msim_db_t *db, const char *sql, sqlite3_stmt **q, const char *what)
{
	if (sqlite3_prepare_v2(db->db, sql, -1, q, NULL) != SQLITE_OK) {
		*q = NULL;
		return db_fail(db, what);
	}
	return 0;
}

static char *
col_dup(sqlite3_stmt *q, int c, bool *oom)
{
	const char *s = (const char *)sqlite3_column_text(q, c);
	char *d = strdup(s ? s : "");
	if (!d)
		*oom = true;
	return d;
}

void
msim_db_run_clear(msim_db_run_t *r)
{
	if (!r)
		return;
	free(r->kind);
	free(r->created);
	free(r->memsim_version);
	free(r->trace_path);
	free(r->trace_hash);
	free(r->trace_format);
	free(r->policy);
	free(r->params);
	free(r->addresses);
	free(r->strategy);
	free(r->setting_key);
	memset(r, 0, sizeof(*r));
}

int
msim_db_run_get(msim_db_t *db, int64_t id, msim_db_run_t *r)
{
	/* Columns a file of an older schema lacks read as NULL. */
	char sql[2048];
	snprintf(sql, sizeof(sql),
		 "SELECT id, kind, created, memsim_version, trace_path,"
		 " trace_hash, trace_format, policy, params, addresses, %s, %s,"
		 " cap_bytes, %s, requests, oom_request, peak_reserved_bytes,"
		 " peak_allocated_bytes, peak_requested_bytes,"
		 " num_device_alloc, num_device_free, num_alloc_retries,"
		 " num_ooms, sim_time_ns, (SELECT value FROM stats s WHERE"
		 " s.run_id=r.id AND s.name='segment.all.peak'),"
		 " frag_at_peak, frag_mean, ext_frag_max, wall_ms"
		 " FROM runs r WHERE id=?",
		 db->version >= 3 ? "strategy" : "NULL",
		 db->version >= 2 ? "setting_key" : "NULL",
		 db->version >= 2 ? "capacity_bytes" : "NULL");
	sqlite3_stmt *q;
	memset(r, 0, sizeof(*r));
	if (db_prepare(db, sql, &q, "cannot read the run"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc = sqlite3_step(q);
	if (rc != SQLITE_ROW) {
		if (rc == SQLITE_DONE)
			snprintf(db->errmsg, sizeof(db->errmsg), "%s: no run %"
				 PRId64, db->path, id);
		else
			db_fail(db, "cannot read the run");
		sqlite3_finalize(q);
		return rc == SQLITE_DONE ? MSIM_ENOTFOUND : MSIM_EDB;
	}
	bool oom = false;
	int c = 0;
	r->id = sqlite3_column_int64(q, c++);
	r->kind = col_dup(q, c++, &oom);
	r->created = col_dup(q, c++, &oom);
	r->memsim_version = col_dup(q, c++, &oom);
	r->trace_path = col_dup(q, c++, &oom);
	r->trace_hash = col_dup(q, c++, &oom);
	r->trace_format = col_dup(q, c++, &oom);
	r->policy = col_dup(q, c++, &oom);
	r->params = col_dup(q, c++, &oom);
	r->addresses = col_dup(q, c++, &oom);
	r->strategy = col_dup(q, c++, &oom);
	if (sqlite3_column_type(q, c) != SQLITE_NULL)
		r->setting_key = col_dup(q, c, &oom);
	c++;
	r->cap_bytes = (uint64_t)sqlite3_column_int64(q, c++);
	r->capacity_bytes = (uint64_t)sqlite3_column_int64(q, c++);
	int64_t *ints[] = {
		&r->requests, &r->oom_request, &r->peak_reserved_bytes,
		&r->peak_allocated_bytes, &r->peak_requested_bytes,
		&r->num_device_alloc, &r->num_device_free,
		&r->num_alloc_retries, &r->num_ooms, &r->sim_time_ns,
		&r->segments_peak,
	};
	for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++)
		*ints[k] = sqlite3_column_int64(q, c++);
	r->frag_at_peak = sqlite3_column_double(q, c++);
	r->frag_mean = sqlite3_column_double(q, c++);
	r->ext_frag_max = sqlite3_column_double(q, c++);
	r->wall_ms = sqlite3_column_double(q, c++);
	sqlite3_finalize(q);
	if (oom) {
		msim_db_run_clear(r);
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", db->path,
			 msim_strerror(MSIM_ENOMEM));
		return MSIM_ENOMEM;
	}
	return 0;
}

/* Collects the first column of q's rows into *ids_out. */
static int
db_collect_ids(msim_db_t *db, sqlite3_stmt *q, int64_t **ids_out,
	       size_t *n_out)
{
	int64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			int64_t *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s",
					 db->path, msim_strerror(MSIM_ENOMEM));
				return MSIM_ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = sqlite3_column_int64(q, 0);
	}
	if (rc != SQLITE_DONE) {
		free(v);
		return db_fail(db, "cannot list the runs");
	}
	*ids_out = v;
	*n_out = n;
	return 0;
}

int
msim_db_list_runs(msim_db_t *db, const msim_db_select_t *sel,
		  int64_t **ids_out, size_t *n_out)
{
	static const msim_db_select_t all = {0};
	if (!sel)
		sel = &all;
	*ids_out = NULL;
	*n_out = 0;
	if (sel->sweep_id > 0 && !db->has_sweeps)
		return 0; /* a file from before sweeps */
	const char *from = sel->sweep_id <= 0 ? "runs r WHERE ?1 IS NULL"
		: sel->all_shards
		? "runs r WHERE r.id IN (SELECT w.run_id FROM sweep_runs w"
		  " JOIN sweeps s ON s.id=w.sweep_id JOIN sweeps o ON"
		  " o.spec_hash=s.spec_hash AND o.kind=s.kind WHERE o.id=?1)"
		: "runs r WHERE r.id IN (SELECT run_id FROM sweep_runs"
		  " WHERE sweep_id=?1)";
	char sql[1024];
	snprintf(sql, sizeof(sql), "SELECT r.id FROM %s AND (?2 IS NULL OR"
		 " r.kind=?2) AND (?3 IS NULL OR r.trace_hash=?3) ORDER BY"
		 " r.id", from);
	sqlite3_stmt *q;
	if (db_prepare(db, sql, &q, "cannot list the runs"))
		return MSIM_EDB;
	if (sel->sweep_id > 0)
		sqlite3_bind_int64(q, 1, sel->sweep_id);
	if (sel->kind)
		sqlite3_bind_text(q, 2, sel->kind, -1, SQLITE_STATIC);
	if (sel->trace_hash)
		sqlite3_bind_text(q, 3, sel->trace_hash, -1, SQLITE_STATIC);
	int rc = db_collect_ids(db, q, ids_out, n_out);
	sqlite3_finalize(q);
	return rc;
}

/* The single integer of sql: 0, MSIM_ENOTFOUND or MSIM_EDB. */
static int
db_one_id(msim_db_t *db, const char *sql, int64_t *id_out)
{
	int64_t v = 0;
	int rc = db_step2(db, sql, 0, 0, &v);
	if (rc == SQLITE_ROW) {
		*id_out = v;
		return 0;
	}
	if (rc == SQLITE_DONE)
		return MSIM_ENOTFOUND;
	return db_fail(db, "cannot read");
}

int
msim_db_newest_run(msim_db_t *db, int64_t *id_out)
{
	return db_one_id(db, "SELECT max(id) FROM runs HAVING count(*) > 0",
			 id_out);
}

int
msim_db_newest_sweep(msim_db_t *db, int64_t *id_out)
{
	if (!db->has_sweeps)
		return MSIM_ENOTFOUND;
	return db_one_id(db, "SELECT max(id) FROM sweeps HAVING count(*) > 0",
			 id_out);
}

int
msim_db_run_stats(msim_db_t *db, int64_t id,
		  void (*fn)(const char *name, int64_t value, void *ctx),
		  void *ctx)
{
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT name, value FROM stats WHERE run_id=?", &q,
		       "cannot read the statistics"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(q, 0);
		if (name)
			fn(name, sqlite3_column_int64(q, 1), ctx);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : db_fail(db, "cannot read the statistics");
}

int
msim_db_run_stat(msim_db_t *db, int64_t id, const char *name,
		 int64_t *value_out)
{
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT value FROM stats WHERE run_id=? AND name=?",
		       &q, "cannot read the statistics"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_text(q, 2, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*value_out = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? MSIM_ENOTFOUND
				 : db_fail(db, "cannot read the statistics");
}

int
msim_db_run_meta(msim_db_t *db, int64_t id,
		 void (*fn)(const char *key, const char *value, void *ctx),
		 void *ctx)
{
	if (!db->has_meta)
		return 0;
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT key, value FROM run_meta WHERE run_id=?"
		       " ORDER BY key", &q, "cannot read run_meta"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(q, 0);
		const char *v = (const char *)sqlite3_column_text(q, 1);
		fn(k ? k : "", v ? v : "", ctx);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : db_fail(db, "cannot read run_meta");
}

int
msim_db_run_meta_get(msim_db_t *db, int64_t id, const char *key, char *buf,
		     size_t n)
{
	if (!db->has_meta)
		return MSIM_ENOTFOUND;
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT value FROM run_meta WHERE run_id=? AND"
		       " key=?", &q, "cannot read run_meta"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(q, 0);
		snprintf(buf, n, "%s", v ? v : "");
	}
	sqlite3_finalize(q);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? MSIM_ENOTFOUND
				 : db_fail(db, "cannot read run_meta");
}

int
msim_db_run_timeline(msim_db_t *db, int64_t id,
		     int (*fn)(const msim_sample_t *s, void *ctx), void *ctx)
{
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT request, time_ns, allocated_bytes,"
		       " reserved_bytes, active_bytes, requested_bytes,"
		       " largest_free_bytes, free_bytes FROM timeline"
		       " WHERE run_id=? ORDER BY request", &q,
		       "cannot read the timeline"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc, frc = 0;
	size_t rows = 0;
	while (!frc && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		msim_sample_t s = {
			.request = (uint64_t)sqlite3_column_int64(q, 0),
			.time = (msim_time_t)sqlite3_column_int64(q, 1),
			.allocated = sqlite3_column_int64(q, 2),
			.reserved = sqlite3_column_int64(q, 3),
			.active = sqlite3_column_int64(q, 4),
			.requested = sqlite3_column_int64(q, 5),
			.largest_free = (uint64_t)sqlite3_column_int64(q, 6),
			.free = (uint64_t)sqlite3_column_int64(q, 7),
		};
		rows++;
		frc = fn(&s, ctx);
	}
	sqlite3_finalize(q);
	if (frc)
		return frc;
	if (rc != SQLITE_DONE)
		return db_fail(db, "cannot read the timeline");
	return rows ? 0 : MSIM_ENOTFOUND;
}

int
msim_db_run_events(msim_db_t *db, int64_t id,
		   int (*fn)(const msim_seg_event_t *ev, void *ctx), void *ctx)
{
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT request, action, addr, size FROM"
		       " segment_events WHERE run_id=? ORDER BY seq", &q,
		       "cannot read the segment events"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	int rc, frc = 0;
	while (!frc && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *a = (const char *)sqlite3_column_text(q, 1);
		msim_seg_event_t ev = {
			.request = (uint64_t)sqlite3_column_int64(q, 0),
			.action = a ? msim_seg_action_parse(a) : -1,
			.addr = (msim_addr_t)sqlite3_column_int64(q, 2),
			.size = (uint64_t)sqlite3_column_int64(q, 3),
		};
		frc = fn(&ev, ctx);
	}
	sqlite3_finalize(q);
	if (frc)
		return frc;
	return rc == SQLITE_DONE ? 0
				 : db_fail(db, "cannot read the segment events");
}

int
msim_db_run_peak_blocks(msim_db_t *db, int64_t id, msim_block_t **blocks_out,
			size_t *n_out)
{
	*blocks_out = NULL;
	*n_out = 0;
	if (!db->has_blocks)
		return 0;
	sqlite3_stmt *q;
	if (db_prepare(db, "SELECT addr, size, state FROM peak_blocks WHERE"
		       " run_id=? ORDER BY addr", &q,
		       "cannot read the blocks at peak"))
		return MSIM_EDB;
	sqlite3_bind_int64(q, 1, id);
	msim_block_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			msim_block_t *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				sqlite3_finalize(q);
				return MSIM_ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		const char *st = (const char *)sqlite3_column_text(q, 2);
		int state = MSIM_BLOCK_ALLOCATED;
		for (int k = 0; k < 3; k++)
			if (st && !strcmp(st, block_states[k]))
				state = k;
		v[n++] = (msim_block_t){
			.addr = (msim_addr_t)sqlite3_column_int64(q, 0),
			.size = (uint64_t)sqlite3_column_int64(q, 1),
			.state = state,
		};
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE) {
		free(v);
		return db_fail(db, "cannot read the blocks at peak");
	}
	*blocks_out = v;
	*n_out = n;
	return 0;
}

const char *const msim_db_run_figures[] = {
	"peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes",
	"frag_at_peak", "frag_mean", "ext_frag_max", "num_device_alloc",
	"num_device_free", "num_alloc_retries", "num_ooms", "requests",
	"wall_ms", NULL,
};

int
msim_db_run_figure(const msim_db_run_t *r, const char *name, double *out)
{
	const double v[] = {
		(double)r->peak_reserved_bytes, (double)r->peak_allocated_bytes,
		(double)r->peak_requested_bytes, r->frag_at_peak, r->frag_mean,
		r->ext_frag_max, (double)r->num_device_alloc,
		(double)r->num_device_free, (double)r->num_alloc_retries,
		(double)r->num_ooms, (double)r->requests, r->wall_ms,
	};
	for (size_t k = 0; msim_db_run_figures[k]; k++)
		if (!strcmp(msim_db_run_figures[k], name)) {
			*out = v[k];
			return 0;
		}
	return MSIM_ENOTFOUND;
}

/* Writes one timeline sample as a CSV line (ctx: the FILE). */
static int
timeline_csv_row(const msim_sample_t *s, void *ctx)
{
	fprintf(ctx, "%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64
		",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%.6f,%.6f\n", s->request,
		(uint64_t)s->time, s->allocated, s->reserved, s->active,
		s->requested, s->largest_free, s->free,
		msim_frag(s->allocated, s->reserved),
		msim_ext_frag(s->largest_free, s->free));
	return 0;
}

int
msim_db_export_timeline(msim_db_t *db, int64_t run_id, const char *path)
{
	FILE *fp = fopen(path, "w");
	if (!fp) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: %s", path,
			 strerror(errno));
		return MSIM_EIO;
	}
	fprintf(fp, "request,time_ns,allocated,reserved,active,requested,"
		"largest_free,free,frag,ext_frag\n");
	int rc = msim_db_run_timeline(db, run_id, timeline_csv_row, fp);
	if (fclose(fp) != 0 && !rc) {
		snprintf(db->errmsg, sizeof(db->errmsg), "%s: cannot write the "
			 "timeline", path);
		return MSIM_EIO;
	}
	return rc;
}
