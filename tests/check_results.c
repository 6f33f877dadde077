/*
 * The results store: a run round-trips through SQLite; a read-only or
 * locked database is a clear error and what it holds stays intact; what a
 * commit wrote is in the file for other connections at once.
 */
#include <config.h>

#include <check.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/error.h"
#include "sim/results.h"

static char path[64];

static void
setup(void)
{
	snprintf(path, sizeof(path), "/tmp/memsim-db-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(path);
}

static void
teardown(void)
{
	char p[96];
	unlink(path);
	snprintf(p, sizeof(p), "%s-wal", path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", path);
	unlink(p);
}

static int64_t
store_one(msim_db_t *db, int64_t peak)
{
	msim_stats_t st = {0};
	st.reserved_bytes[0].peak = peak;
	st.num_ooms = 1;
	msim_summary_t sum = {.requests = 10, .oom_request = 7};
	msim_timeline_t tl;
	ck_assert_int_eq(msim_timeline_init(&tl, 8), 0);
	msim_timeline_add(&tl, &(msim_sample_t){.request = 0});
	msim_timeline_add(&tl, &(msim_sample_t){.request = 5, .reserved = 4,
						.allocated = 3});
	msim_seg_event_t ev[2] = {{0, 4096, 2097152, MSIM_SEG_ALLOC},
				  {7, 0, 512, MSIM_SEG_OOM}};
	msim_run_info_t info = {.trace_path = "t.csv", .trace_hash = "abc",
				.trace_format = "csv", .policy = "pytorch",
				.params = "max_split_size_mb:128",
				.addresses = "model"};
	int64_t id = -1;
	ck_assert_int_eq(msim_db_store_run(db, &info, &sum, &st, &tl, ev, 2,
					   &id), 0);
	msim_timeline_clear(&tl);
	return id;
}

static int64_t
query_int(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return v;
}

START_TEST(test_store_and_read_back)
{
	msim_db_t *db;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	int64_t a = store_one(db, 123), b = store_one(db, 456);
	ck_assert_int_ne(a, b);
	msim_db_close(db);
	/* Reopening keeps what is there. */
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM runs"), 2);
	ck_assert_int_eq(query_int("SELECT value FROM meta WHERE "
				   "key='schema_version'"), MSIM_DB_SCHEMA_VERSION);
	ck_assert_int_eq(query_int("SELECT peak_reserved_bytes FROM runs "
				   "ORDER BY id DESC"), 456);
	ck_assert_int_eq(query_int("SELECT value FROM stats WHERE "
				   "name='reserved_bytes.all.peak' "
				   "ORDER BY run_id"), 123);
	ck_assert_int_eq(query_int("SELECT count(*) FROM stats"), 2 * 122);
	ck_assert_int_eq(query_int("SELECT count(*) FROM timeline"), 4);
	ck_assert_int_eq(query_int("SELECT size FROM segment_events WHERE "
				   "action='oom'"), 512);
	ck_assert_int_eq(query_int("SELECT oom_request FROM runs"), 7);
}
END_TEST

/* Not a database, or nowhere to write: a clear error, the file untouched. */
START_TEST(test_bad_database_files)
{
	FILE *fp = fopen(path, "w");
	fputs("precious notes, not a database\n", fp);
	fclose(fp);
	msim_db_t *db;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), MSIM_EDB);
	ck_assert_msg(strstr(why, path) && strstr(why, "not a database"), "%s",
		      why);
	char buf[64] = "";
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), fp));
	fclose(fp);
	ck_assert_str_eq(buf, "precious notes, not a database\n");
	ck_assert_int_eq(msim_db_open("/nonexistent/dir/x.db", &db, why,
				      sizeof(why)), MSIM_EDB);
	ck_assert_msg(strstr(why, "/nonexistent/dir/x.db: cannot create the "
			     "database: folder /nonexistent/dir: No such file"),
		      "%s", why);
	/* Reading: the file as it was, no new file for a missing one. */
	ck_assert_int_eq(msim_db_open_readonly(path, &db, why, sizeof(why)),
			 MSIM_EDB);
	ck_assert_msg(strstr(why, path) && strstr(why, "not a database"), "%s",
		      why);
	ck_assert_int_eq(msim_db_open_readonly("/nonexistent/x.db", &db, why,
					       sizeof(why)), MSIM_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(why, "/nonexistent/x.db"));
}
END_TEST

static int
count_sample(const msim_sample_t *s, void *ctx)
{
	int64_t *sum = ctx;
	*sum += s->reserved * 100 + s->allocated * 10 + (int64_t)s->request;
	return 0;
}

static int
stop_at_first(const msim_seg_event_t *ev, void *ctx)
{
	*(msim_seg_event_t *)ctx = *ev;
	return 1;
}

static void
count_stat(const char *name, int64_t value, void *ctx)
{
	int64_t *n = ctx;
	(*n)++;
	if (!strcmp(name, "reserved_bytes.all.peak"))
		n[1] = value;
}

static void
join_meta(const char *k, const char *v, void *ctx)
{
	strcat(ctx, k);
	strcat(ctx, "=");
	strcat(ctx, v);
	strcat(ctx, ";");
}

/* The read calls give back what was stored, through a read-only
 * connection that changes nothing in the file. */
START_TEST(test_read_calls)
{
	msim_db_t *db;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	int64_t a = store_one(db, 123);
	msim_stats_t st = {0};
	st.reserved_bytes[0].peak = 4 << 20;
	st.segment[0].peak = 3;
	msim_summary_t sum = {.requests = 4, .oom_request = -1,
			      .frag_at_peak = 0.25};
	const char *meta[] = {"mode", "raw", "device", "H200", NULL};
	msim_block_t blocks[2] = {{8192, 512, MSIM_BLOCK_FREE},
				  {4096, 1024, MSIM_BLOCK_ALLOCATED}};
	msim_run_info_t info = {.kind = "measured", .trace_path = "m.csv",
				.trace_hash = "def", .policy = "raw",
				.cap_bytes = 1 << 30, .addresses = "model",
				.strategy = "dtype=fp16", .meta = meta,
				.capacity_bytes = 80ULL << 30,
				.peak_blocks = blocks, .npeak_blocks = 2};
	int64_t b;
	int ex;
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, NULL,
						NULL, 0, MSIM_DB_REPLACE, &b,
						&ex), 0);
	msim_db_close(db);
	FILE *fp = fopen(path, "rb");
	ck_assert_ptr_nonnull(fp);
	static char before[1 << 20], after[1 << 20];
	size_t nbefore = fread(before, 1, sizeof(before), fp);
	fclose(fp);

	ck_assert_int_eq(msim_db_open_readonly(path, &db, why, sizeof(why)), 0);
	msim_db_run_t r;
	ck_assert_int_eq(msim_db_run_get(db, b, &r), 0);
	ck_assert_int_eq(r.id, b);
	ck_assert_str_eq(r.kind, "measured");
	ck_assert_str_eq(r.trace_path, "m.csv");
	ck_assert_str_eq(r.policy, "raw");
	ck_assert_str_eq(r.params, "");
	ck_assert_str_eq(r.strategy, "dtype=fp16");
	ck_assert_str_eq(r.setting_key, "measured|def|raw||1073741824|model|"
			 "capacity=85899345920;strategy=dtype=fp16");
	ck_assert_uint_eq(r.cap_bytes, 1 << 30);
	ck_assert_uint_eq(r.capacity_bytes, 80ULL << 30);
	ck_assert_int_eq(r.peak_reserved_bytes, 4 << 20);
	ck_assert_int_eq(r.segments_peak, 3);
	ck_assert_int_eq(r.oom_request, -1);
	ck_assert_int_eq(r.requests, 4);
	double f;
	ck_assert_int_eq(msim_db_run_figure(&r, "frag_at_peak", &f), 0);
	ck_assert_double_eq(f, 0.25);
	ck_assert_int_eq(msim_db_run_figure(&r, "peak", &f), MSIM_ENOTFOUND);
	msim_db_run_clear(&r);
	ck_assert_int_eq(msim_db_run_get(db, a, &r), 0);
	ck_assert_ptr_null(r.setting_key);
	ck_assert_str_eq(r.strategy, "");
	ck_assert_uint_eq(r.capacity_bytes, 0);
	msim_db_run_clear(&r);
	ck_assert_int_eq(msim_db_run_get(db, 99, &r), MSIM_ENOTFOUND);

	int64_t *ids;
	size_t n;
	ck_assert_int_eq(msim_db_list_runs(db, NULL, &ids, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(ids[0], a);
	ck_assert_int_eq(ids[1], b);
	free(ids);
	msim_db_select_t sel = {.kind = "measured"};
	ck_assert_int_eq(msim_db_list_runs(db, &sel, &ids, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(ids[0], b);
	free(ids);
	sel = (msim_db_select_t){.trace_hash = "abc"};
	ck_assert_int_eq(msim_db_list_runs(db, &sel, &ids, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(ids[0], a);
	free(ids);
	sel = (msim_db_select_t){.sweep_id = 1};
	ck_assert_int_eq(msim_db_list_runs(db, &sel, &ids, &n), 0);
	ck_assert_uint_eq(n, 0);
	int64_t id;
	ck_assert_int_eq(msim_db_newest_run(db, &id), 0);
	ck_assert_int_eq(id, b);
	ck_assert_int_eq(msim_db_newest_sweep(db, &id), MSIM_ENOTFOUND);

	int64_t cnt[2] = {0, 0}, v;
	ck_assert_int_eq(msim_db_run_stats(db, a, count_stat, cnt), 0);
	ck_assert_int_eq(cnt[0], 122);
	ck_assert_int_eq(cnt[1], 123);
	ck_assert_int_eq(msim_db_run_stat(db, a, "num_ooms", &v), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(msim_db_run_stat(db, a, "no.such", &v),
			 MSIM_ENOTFOUND);
	char kv[256] = "", mode[16];
	ck_assert_int_eq(msim_db_run_meta(db, b, join_meta, kv), 0);
	ck_assert_str_eq(kv, "device=H200;mode=raw;");
	ck_assert_int_eq(msim_db_run_meta_get(db, b, "mode", mode,
					      sizeof(mode)), 0);
	ck_assert_str_eq(mode, "raw");
	ck_assert_int_eq(msim_db_run_meta_get(db, a, "mode", mode,
					      sizeof(mode)), MSIM_ENOTFOUND);
	/* store_one's timeline: (0: 0, 0), (5: reserved 4, allocated 3). */
	int64_t tsum = 0;
	ck_assert_int_eq(msim_db_run_timeline(db, a, count_sample, &tsum), 0);
	ck_assert_int_eq(tsum, 400 + 30 + 5);
	ck_assert_int_eq(msim_db_run_timeline(db, b, count_sample, &tsum),
			 MSIM_ENOTFOUND);
	msim_seg_event_t ev = {0};
	ck_assert_int_eq(msim_db_run_events(db, a, stop_at_first, &ev), 1);
	ck_assert_int_eq(ev.action, MSIM_SEG_ALLOC);
	ck_assert_uint_eq(ev.addr, 4096);
	ck_assert_uint_eq(ev.size, 2097152);
	msim_block_t *pb;
	ck_assert_int_eq(msim_db_run_peak_blocks(db, b, &pb, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(pb[0].addr, 4096);
	ck_assert_int_eq(pb[0].state, MSIM_BLOCK_ALLOCATED);
	ck_assert_uint_eq(pb[1].size, 512);
	ck_assert_int_eq(pb[1].state, MSIM_BLOCK_FREE);
	free(pb);
	/* A read-only connection stores nothing. */
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, NULL,
						NULL, 0, MSIM_DB_INSERT, &id,
						&ex), MSIM_EDB);
	ck_assert_ptr_nonnull(strstr(msim_db_errmsg(db), "reading only"));
	msim_db_close(db);
	fp = fopen(path, "rb");
	size_t nafter = fread(after, 1, sizeof(after), fp);
	fclose(fp);
	ck_assert_uint_eq(nbefore, nafter);
	ck_assert(!memcmp(before, after, nafter));
}
END_TEST

/* Another writer holds the lock: storing fails after the busy timeout,
 * and the runs already stored stay. */
START_TEST(test_locked_database)
{
	msim_db_t *db;
	char why[256];
	setenv("MEMSIM_DB_BUSY_MS", "50", 1);
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	store_one(db, 1);
	sqlite3 *other;
	ck_assert_int_eq(sqlite3_open(path, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL,
				      NULL), SQLITE_OK);
	msim_stats_t st = {0};
	msim_summary_t sum = {0};
	msim_run_info_t info = {.trace_path = "t", .trace_hash = "h",
				.policy = "pytorch"};
	int64_t id;
	ck_assert_int_eq(msim_db_store_run(db, &info, &sum, &st, NULL, NULL, 0,
					   &id), MSIM_EDB);
	ck_assert_ptr_nonnull(strstr(msim_db_errmsg(db), "locked"));
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM runs"), 1);
	unsetenv("MEMSIM_DB_BUSY_MS");
}
END_TEST

typedef struct failed_seen_s {
	int n;
	char keys[4][32], reasons[4][32], status[4][16];
} failed_seen_t;

static void
failed_collect(void *ctx, const msim_db_failed_t *f)
{
	failed_seen_t *fs = ctx;
	ck_assert_int_lt(fs->n, 4);
	snprintf(fs->keys[fs->n], sizeof(fs->keys[0]), "%s", f->setting_key);
	snprintf(fs->reasons[fs->n], sizeof(fs->reasons[0]), "%s", f->reason);
	snprintf(fs->status[fs->n], sizeof(fs->status[0]), "%s", f->status);
	fs->n++;
}

static void
exec_sql(const char *sql)
{
	sqlite3 *db;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* A sweep's failed settings: stored once each (the last reason), listed by
 * sweep, forgotten when run; a file of schema 4 reads as none and is
 * migrated with its rows kept. */
START_TEST(test_failed_settings)
{
	msim_db_t *db;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	msim_sweep_row_t row = {"sweep", "grid", "abc", -1, 1, 1, 3};
	int64_t sw;
	ck_assert_int_eq(msim_db_sweep_open(db, &row, &sw), 0);
	ck_assert_int_eq(msim_db_sweep_fail(db, sw, "k1", "t.csv", "pytorch",
					    "", "failed", "first"), 0);
	ck_assert_int_eq(msim_db_sweep_fail(db, sw, "k1", "t.csv", "pytorch",
					    "", "failed", "second"), 0);
	ck_assert_int_eq(msim_db_sweep_fail(db, sw, "k2", "t.csv", "buddy",
					    "min_block:1024", "crashed",
					    "crashed (signal 11)"), 0);
	failed_seen_t fs = {0};
	ck_assert_int_eq(msim_db_sweep_failed(db, sw, failed_collect, &fs), 0);
	ck_assert_int_eq(fs.n, 2);
	ck_assert_str_eq(fs.keys[0], "k1");
	ck_assert_str_eq(fs.reasons[0], "second");
	ck_assert_str_eq(fs.status[1], "crashed");
	fs.n = 0;
	ck_assert_int_eq(msim_db_sweep_failed(db, sw + 1, failed_collect, &fs),
			 0);
	ck_assert_int_eq(fs.n, 0);
	ck_assert_int_eq(msim_db_sweep_unfail(db, sw, "k1"), 0);
	ck_assert_int_eq(msim_db_sweep_failed(db, 0, failed_collect, &fs), 0);
	ck_assert_int_eq(fs.n, 1);
	ck_assert_str_eq(fs.keys[0], "k2");
	int64_t id = store_one(db, 789);
	msim_db_close(db);

	/* The same file as schema 4 wrote it: no table sweep_failed. */
	exec_sql("DROP TABLE sweep_failed;"
		 "UPDATE meta SET value='4' WHERE key='schema_version'");
	ck_assert_int_eq(msim_db_open_readonly(path, &db, why, sizeof(why)),
			 0);
	fs.n = 0;
	ck_assert_int_eq(msim_db_sweep_failed(db, 0, failed_collect, &fs), 0);
	ck_assert_int_eq(fs.n, 0);
	ck_assert_int_eq(msim_db_sweep_unfail(db, sw, "k2"), 0);
	msim_db_close(db);
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_db_sweep_fail(db, sw, "k3", "t.csv", "pytorch",
					    "", "failed", "third"), 0);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT value FROM meta WHERE "
				   "key='schema_version'"), MSIM_DB_SCHEMA_VERSION);
	ck_assert_int_eq(query_int("SELECT count(*) FROM sweep_failed"), 1);
	ck_assert_int_eq(query_int("SELECT max(id) FROM runs"), id);
}
END_TEST

typedef struct samples_s {
	msim_sample_t v[4];
	size_t n;
} samples_t;

static int
collect_sample(const msim_sample_t *x, void *ctx)
{
	samples_t *s = ctx;
	if (s->n < 4)
		s->v[s->n++] = *x;
	return 0;
}

/* Query text of one row's columns joined by '|' (for exact rows). */
static void
query_text(const char *sql, char *out, size_t n)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	size_t k = 0;
	out[0] = '\0';
	for (int c = 0; c < sqlite3_column_count(q); c++)
		k += (size_t)snprintf(out + k, n - k, "%s%s|",
				      sqlite3_column_type(q, c) == SQLITE_TEXT
					      ? "'" : "",
				      (const char *)sqlite3_column_text(q, c));
	sqlite3_finalize(q);
	sqlite3_close(db);
}

/* Schema 6 keeps a run's timeline, segment events and blocks at peak as
 * one row each, schema 7 its statistics too; the views of the old names
 * give the rows back, values and types as stored (negative and 62-bit
 * numbers too), blocks by address with the last of a repeated address,
 * statistics by name.  A file of schema 5 (the rows as tables) reads as
 * it is read-only and is packed when opened to write. */
START_TEST(test_packed_rows)
{
	msim_db_t *db;
	char why[256], row[512];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	msim_stats_t st = {0};
	st.num_alloc_retries = 7;
	st.reserved_bytes[0].peak = 4611686018427387911LL;
	st.max_split_size = -1;
	msim_summary_t sum = {.requests = 3, .oom_request = -1};
	msim_timeline_t tl;
	ck_assert_int_eq(msim_timeline_init(&tl, 8), 0);
	msim_timeline_add(&tl, &(msim_sample_t){.request = 1, .time = 10,
		.allocated = -5, .reserved = 4611686018427387911LL,
		.active = 9, .requested = 0, .largest_free = 100,
		.free = 4611686018427387904ULL});
	msim_timeline_add(&tl, &(msim_sample_t){.request = 2, .time = 20,
		.allocated = 7, .reserved = 8});
	msim_seg_event_t ev[2] = {{0, 4096, 2097152, MSIM_SEG_ALLOC},
				  {2, 8192, 512, MSIM_SEG_FREE}};
	msim_block_t blocks[4] = {{8192, 512, MSIM_BLOCK_FREE},
				  {4096, 1024, MSIM_BLOCK_ALLOCATED},
				  {8192, 256, MSIM_BLOCK_PENDING},
				  {0, 4096, MSIM_BLOCK_ALLOCATED}};
	msim_run_info_t info = {.trace_path = "t.csv", .trace_hash = "abc",
				.policy = "pytorch", .addresses = "model",
				.peak_blocks = blocks, .npeak_blocks = 4};
	int64_t id;
	int existed;
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, &tl, ev,
						2, MSIM_DB_REPLACE, &id,
						&existed), 0);
	msim_timeline_clear(&tl);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM timeline_packed"), 1);
	query_text("SELECT * FROM timeline ORDER BY request", row,
		   sizeof(row));
	ck_assert_str_eq(row, "1|1|10|-5|4611686018427387911|9|0|100|"
			 "4611686018427387904|");
	query_text("SELECT typeof(request), typeof(free_bytes), count(*),"
		   " sum(time_ns) FROM timeline", row, sizeof(row));
	ck_assert_str_eq(row, "'integer|'integer|2|30|");
	query_text("SELECT * FROM segment_events WHERE seq=1", row,
		   sizeof(row));
	ck_assert_str_eq(row, "1|1|2|'segment_free|8192|512|");
	query_text("SELECT group_concat(addr || ':' || size || ':' || state,"
		   " ' ') FROM peak_blocks", row, sizeof(row));
	ck_assert_str_eq(row, "'0:4096:allocated 4096:1024:allocated "
			 "8192:256:pending|");
	query_text("SELECT typeof(run_id), typeof(name), typeof(value),"
		   " count(*), count(DISTINCT name) FROM stats", row,
		   sizeof(row));
	ck_assert_str_eq(row, "'integer|'text|'integer|122|122|");
	/* By name, as the table's key (run_id, name) kept them. */
	query_text("SELECT group_concat(value, ' ') FROM (SELECT value FROM"
		   " stats WHERE name IN ('reserved_bytes.all.peak',"
		   " 'num_alloc_retries', 'max_split_size'))", row,
		   sizeof(row));
	ck_assert_str_eq(row, "'-1 7 4611686018427387911|");
	ck_assert_int_eq(query_int("SELECT count(*) FROM (SELECT name, lag(name)"
				   " OVER () AS prev FROM stats) WHERE"
				   " prev >= name"), 0);

	/* The same run as schema 5 stored it: four tables of rows. */
	exec_sql("DROP VIEW timeline; DROP VIEW segment_events;"
		 " DROP VIEW peak_blocks; DROP VIEW stats;"
		 "CREATE TABLE stats(run_id INTEGER NOT NULL, name TEXT NOT"
		 " NULL, value INTEGER NOT NULL, PRIMARY KEY(run_id, name))"
		 " WITHOUT ROWID;"
		 "INSERT INTO stats VALUES(1,'num_ooms',3),"
		 " (1,'max_split_size',-1);"
		 "DELETE FROM stats_packed;"
		 "CREATE TABLE timeline(run_id INTEGER NOT NULL, request"
		 " INTEGER NOT NULL, time_ns INTEGER NOT NULL, allocated_bytes"
		 " INTEGER NOT NULL, reserved_bytes INTEGER NOT NULL,"
		 " active_bytes INTEGER NOT NULL, requested_bytes INTEGER NOT"
		 " NULL, largest_free_bytes INTEGER NOT NULL, free_bytes"
		 " INTEGER NOT NULL, PRIMARY KEY(run_id, request)) WITHOUT"
		 " ROWID;"
		 "INSERT INTO timeline VALUES(1,2,20,7,8,0,0,0,0),"
		 " (1,1,10,-5,4611686018427387911,9,0,100,"
		 "  4611686018427387904);"
		 "CREATE TABLE segment_events(run_id INTEGER NOT NULL, seq"
		 " INTEGER NOT NULL, request INTEGER NOT NULL, action TEXT NOT"
		 " NULL, addr INTEGER NOT NULL, size INTEGER NOT NULL, PRIMARY"
		 " KEY(run_id, seq)) WITHOUT ROWID;"
		 "INSERT INTO segment_events VALUES(1,1,2,'segment_free',8192,"
		 " 512), (1,0,0,'segment_alloc',4096,2097152);"
		 "CREATE TABLE peak_blocks(run_id INTEGER NOT NULL, addr"
		 " INTEGER NOT NULL, size INTEGER NOT NULL, state TEXT NOT NULL,"
		 " PRIMARY KEY(run_id, addr)) WITHOUT ROWID;"
		 "INSERT INTO peak_blocks VALUES(1,8192,256,'pending'),"
		 " (1,4096,1024,'allocated');"
		 "DELETE FROM timeline_packed;"
		 "DELETE FROM segment_events_packed;"
		 "DELETE FROM peak_blocks_packed;"
		 "UPDATE meta SET value='5' WHERE key='schema_version'");
	ck_assert_int_eq(msim_db_open_readonly(path, &db, why, sizeof(why)),
			 0);
	samples_t got = {0};
	ck_assert_int_eq(msim_db_run_timeline(db, id, collect_sample, &got), 0);
	ck_assert_uint_eq(got.n, 2);
	ck_assert_uint_eq(got.v[0].request, 1);
	ck_assert_int_eq(got.v[0].allocated, -5);
	ck_assert_int_eq(got.v[0].reserved, 4611686018427387911LL);
	ck_assert_uint_eq(got.v[0].free, 4611686018427387904ULL);
	ck_assert_uint_eq(got.v[1].time, 20);
	int64_t v = 0;
	ck_assert_int_eq(msim_db_run_stat(db, id, "num_ooms", &v), 0);
	ck_assert_int_eq(v, 3);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM timeline_packed"), 0);
	/* merge packs a schema 5 file's rows into a file of schema 7. */
	char path2[80];
	snprintf(path2, sizeof(path2), "%s-merged", path);
	unlink(path2);
	int64_t added, skipped;
	ck_assert_int_eq(msim_db_open(path2, &db, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_db_merge(db, path, &added, &skipped), 0);
	ck_assert_int_eq(added, 1);
	samples_t merged = {0};
	ck_assert_int_eq(msim_db_run_timeline(db, 1, collect_sample, &merged),
			 0);
	ck_assert_uint_eq(merged.n, 2);
	ck_assert_int_eq(merged.v[0].reserved, 4611686018427387911LL);
	msim_block_t *pb;
	size_t npb;
	ck_assert_int_eq(msim_db_run_peak_blocks(db, 1, &pb, &npb), 0);
	ck_assert_uint_eq(npb, 2);
	ck_assert_uint_eq(pb[1].addr, 8192);
	ck_assert_int_eq(pb[1].state, MSIM_BLOCK_PENDING);
	free(pb);
	ck_assert_int_eq(msim_db_run_stat(db, 1, "max_split_size", &v), 0);
	ck_assert_int_eq(v, -1);
	msim_db_close(db);
	char p2[96];
	unlink(path2);
	snprintf(p2, sizeof(p2), "%s-wal", path2);
	unlink(p2);
	snprintf(p2, sizeof(p2), "%s-shm", path2);
	unlink(p2);
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT value FROM meta WHERE "
				   "key='schema_version'"),
			 MSIM_DB_SCHEMA_VERSION);
	ck_assert_int_eq(query_int("SELECT count(*) FROM sqlite_master WHERE"
				   " type='view'"), 4);
	query_text("SELECT data FROM stats_packed", row, sizeof(row));
	ck_assert_str_eq(row, "'[[\"max_split_size\",-1],[\"num_ooms\",3]]|");
	query_text("SELECT data FROM timeline_packed", row, sizeof(row));
	ck_assert_str_eq(row, "'[[1,10,-5,4611686018427387911,9,0,100,"
			 "4611686018427387904],[2,20,7,8,0,0,0,0]]|");
	query_text("SELECT data FROM segment_events_packed", row, sizeof(row));
	ck_assert_str_eq(row, "'[[0,0,\"segment_alloc\",4096,2097152],"
			 "[1,2,\"segment_free\",8192,512]]|");
	query_text("SELECT group_concat(addr || ':' || state, ' ') FROM"
		   " peak_blocks", row, sizeof(row));
	ck_assert_str_eq(row, "'4096:allocated 8192:pending|");
}
END_TEST

/* The packed text is what SQLite's own json_array() makes of the rows
 * (the views read it back either way): a timeline whose reserved bytes and
 * largest free block repeat from sample to sample and whose active bytes
 * equal allocated, or not (their text is copied when they repeat), and the
 * statistics. */
START_TEST(test_packed_text)
{
	msim_db_t *db;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	msim_stats_t st = {0};
	st.num_ooms = 12345678901234LL;
	st.allocated_bytes[1].current = -77;
	msim_summary_t sum = {.requests = 9, .oom_request = -1};
	msim_timeline_t tl;
	ck_assert_int_eq(msim_timeline_init(&tl, 16), 0);
	static const int64_t x[][6] = {
		/* allocated, reserved, active, largest_free, free, time */
		{5, 1000000000000, 5, 7, 9, 1},
		{123456789012, 1000000000000, 123456789012, 7, 0, 22},
		{123456789012, 99999999, -3, 7, 1, 333},
		{0, 99999999, 0, 123456789012345678, 2, 4444},
		{-9223372036854775807LL - 1, 99999999, 1, 123456789012345678,
		 3, 55555},
		{1, 100000000, 1, 8, 4, 666666},
	};
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		msim_timeline_add(&tl, &(msim_sample_t){.request = i + 1,
			.time = (msim_time_t)x[i][5], .allocated = x[i][0],
			.reserved = x[i][1], .active = x[i][2],
			.requested = (int64_t)i, .largest_free = (uint64_t)x[i][3],
			.free = (uint64_t)x[i][4]});
	msim_run_info_t info = {.trace_path = "t.csv", .trace_hash = "abc",
				.policy = "pytorch", .addresses = "model"};
	int64_t id;
	int existed;
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, &tl,
						NULL, 0, MSIM_DB_REPLACE, &id,
						&existed), 0);
	msim_timeline_clear(&tl);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM timeline"), 6);
	ck_assert_int_eq(query_int("SELECT data = (SELECT json_group_array("
				   "json_array(request, time_ns,"
				   " allocated_bytes, reserved_bytes,"
				   " active_bytes, requested_bytes,"
				   " largest_free_bytes, free_bytes)) FROM"
				   " (SELECT * FROM timeline ORDER BY request))"
				   " FROM timeline_packed"), 1);
	ck_assert_int_eq(query_int("SELECT sum(active_bytes = -3) + sum("
				   "largest_free_bytes = 123456789012345678)"
				   " FROM timeline"), 3);
	ck_assert_int_eq(query_int("SELECT data = (SELECT json_group_array("
				   "json_array(name, value)) FROM (SELECT *"
				   " FROM stats ORDER BY name)) FROM"
				   " stats_packed"), 1);
	ck_assert_int_eq(query_int("SELECT value FROM stats WHERE name ="
				   " 'num_ooms'"), 12345678901234LL);
	ck_assert_int_eq(query_int("SELECT value FROM stats WHERE name ="
				   " 'allocated_bytes.small_pool.current'"),
			 -77);
}
END_TEST

/* Counts msim_db_set_writer_lock()'s calls; held says whether they pair. */
typedef struct wl_count_s {
	int locks, unlocks;
	bool held;
} wl_count_t;

static void
wl_lock(void *ctx)
{
	wl_count_t *c = ctx;
	ck_assert(!c->held);
	c->held = true;
	c->locks++;
}

static void
wl_unlock(void *ctx)
{
	wl_count_t *c = ctx;
	ck_assert(c->held);
	c->held = false;
	c->unlocks++;
}

/* The writer lock is taken once around each run stored and given back
 * whatever happens: stored, found stored already (MSIM_DB_SKIP), or
 * failing on another writer's lock. */
START_TEST(test_writer_lock)
{
	msim_db_t *db;
	char why[256];
	setenv("MEMSIM_DB_BUSY_MS", "50", 1);
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	wl_count_t c = {0};
	msim_db_set_writer_lock(db, wl_lock, wl_unlock, &c);
	msim_stats_t st = {0};
	msim_summary_t sum = {0};
	msim_run_info_t info = {.trace_path = "t", .trace_hash = "h",
				.policy = "pytorch", .addresses = "model"};
	int64_t id, id2;
	int existed;
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, NULL,
						NULL, 0, MSIM_DB_SKIP, &id,
						&existed), 0);
	ck_assert_int_eq(c.locks, 1);
	ck_assert_int_eq(c.unlocks, 1);
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, NULL,
						NULL, 0, MSIM_DB_SKIP, &id2,
						&existed), 0);
	ck_assert_int_eq(existed, 1);
	ck_assert_int_eq(id2, id);
	ck_assert_int_eq(c.locks, 2);
	ck_assert_int_eq(c.unlocks, 2);
	sqlite3 *other;
	ck_assert_int_eq(sqlite3_open(path, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL,
				      NULL), SQLITE_OK);
	info.trace_hash = "h2";
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, NULL,
						NULL, 0, MSIM_DB_SKIP, &id2,
						&existed), MSIM_EDB);
	ck_assert_int_eq(c.locks, 3);
	ck_assert_int_eq(c.unlocks, 3);
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);
	msim_db_set_writer_lock(db, NULL, NULL, NULL);
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, NULL,
						NULL, 0, MSIM_DB_SKIP, &id2,
						&existed), 0);
	ck_assert_int_eq(c.locks, 3);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM runs"), 2);
	unsetenv("MEMSIM_DB_BUSY_MS");
}
END_TEST

/* Stores a run of the given requests with timeline tl (cleared) under
 * trace hash hash, replacing any run of that setting; returns its id. */
static int64_t
store_timeline(msim_db_t *db, const char *hash, uint64_t requests,
	       msim_timeline_t *tl)
{
	msim_stats_t st = {0};
	msim_summary_t sum = {.requests = requests, .oom_request = -1};
	msim_run_info_t info = {.trace_path = "t.csv", .trace_hash = hash,
				.policy = "pytorch", .addresses = "model"};
	int64_t id;
	int existed;
	ck_assert_int_eq(msim_db_store_run_mode(db, &info, &sum, &st, tl,
						NULL, 0, MSIM_DB_REPLACE, &id,
						&existed), 0);
	msim_timeline_clear(tl);
	return id;
}

/*
 * The connection that writes gathers a transaction's WAL frames and
 * writes them at its commit (sim/results_wal.c, VFS memsim-wal): another
 * connection, through SQLite's default VFS, reads each run as soon as it
 * is stored.  Runs of 2, 3,000 and 150,000 samples: a transaction of two
 * pages, one of more than the 64 KiB written a call, and one of more than
 * the 1 MiB gathered and SQLite's 2 MiB page cache, which it spills into
 * the WAL before the commit frame.
 */
START_TEST(test_wal_frames_at_commit)
{
	msim_db_t *db;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	sqlite3 *other;
	ck_assert_int_eq(sqlite3_open(path, &other), SQLITE_OK);
	static const int64_t sizes[] = {2, 3000, 150000, 5};
	for (int64_t k = 0; k < 4; k++) {
		int64_t n = sizes[k];
		msim_timeline_t tl;
		ck_assert_int_eq(msim_timeline_init(&tl, (size_t)n), 0);
		for (int64_t i = 0; i < n; i++)
			msim_timeline_add(&tl, &(msim_sample_t){
				.request = (uint64_t)i, .time = 10 * i,
				.allocated = 7 * i + k, .reserved = 13 * i,
				.active = 7 * i + k, .largest_free = i % 1000,
				.free = (uint64_t)i});
		char hash[16];
		snprintf(hash, sizeof(hash), "h%d", (int)k);
		int64_t id = store_timeline(db, hash, (uint64_t)n, &tl);
		char sql[200];
		snprintf(sql, sizeof(sql), "SELECT count(*), sum(allocated_bytes),"
			 " sum(reserved_bytes), max(request) FROM timeline"
			 " WHERE run_id=%lld", (long long)id);
		sqlite3_stmt *q;
		ck_assert_int_eq(sqlite3_prepare_v2(other, sql, -1, &q, NULL),
				 SQLITE_OK);
		ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
		ck_assert_int_eq(sqlite3_column_int64(q, 0), n);
		ck_assert_int_eq(sqlite3_column_int64(q, 1),
				 7 * n * (n - 1) / 2 + k * n);
		ck_assert_int_eq(sqlite3_column_int64(q, 2),
				 13 * n * (n - 1) / 2);
		ck_assert_int_eq(sqlite3_column_int64(q, 3), n - 1);
		sqlite3_finalize(q);
	}
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_prepare_v2(other, "PRAGMA integrity_check",
					    -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(q, 0), "ok");
	sqlite3_finalize(q);
	sqlite3_close(other);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM runs"), 4);
}
END_TEST

static off_t
file_size(const char *suffix)
{
	char p[96];
	struct stat sb;
	snprintf(p, sizeof(p), "%s%s", path, suffix);
	return stat(p, &sb) ? -1 : sb.st_size;
}

static const char *
journal_mode(void)
{
	static char mode[16];
	sqlite3 *db;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &q,
					    NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	snprintf(mode, sizeof(mode), "%s", sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	sqlite3_close(db);
	return mode;
}

/*
 * A new database is made without a rollback journal (the switch to WAL is
 * journalled in memory) and is a WAL database with its schema, whether
 * the file was missing or there and empty; it stores and keeps runs.
 */
START_TEST(test_new_database)
{
	for (int k = 0; k < 2; k++) {
		if (k == 1) { /* an empty file already there */
			FILE *f = fopen(path, "w");
			ck_assert_ptr_nonnull(f);
			fclose(f);
			ck_assert_int_eq(file_size(""), 0);
		}
		msim_db_t *db;
		char why[256];
		ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
		ck_assert_int_eq(file_size("-journal"), -1);
		ck_assert_int_eq(file_size("") % 4096, 0);
		ck_assert_int_gt(file_size(""), 0);
		store_one(db, 4096);
		msim_db_close(db);
		ck_assert_str_eq(journal_mode(), "wal");
		ck_assert_int_eq(file_size("-wal"), -1);
		ck_assert_int_eq(query_int("SELECT count(*) FROM runs"), 1);
		ck_assert_int_eq(query_int("SELECT value FROM meta WHERE"
					   " key='schema_version'"),
				 MSIM_DB_SCHEMA_VERSION);
		ck_assert_int_eq(query_int("SELECT count(*) FROM"
					   " pragma_integrity_check WHERE"
					   " integrity_check <> 'ok'"), 0);
		/* Opened again: a database that was there, nothing made. */
		ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
		store_one(db, 8192);
		msim_db_close(db);
		ck_assert_int_eq(query_int("SELECT count(*) FROM runs"), 2);
		teardown();
	}
}
END_TEST

/*
 * The connection that makes a new file keeps its lock on it (a sweep's
 * parent makes the database while its workers replay, then checkpoints
 * with the same connection): another process's connection closing then
 * is not the last one, so it leaves the WAL, with what the first stores
 * next, where it is.  Syncing the new file through a descriptor closed
 * at once dropped the process's POSIX locks on it: the other connection
 * deleted the WAL at its close.
 */
START_TEST(test_new_database_keeps_its_lock)
{
	msim_db_t *db;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &db, why, sizeof(why)), 0);
	store_one(db, 4096);
	ck_assert_int_ge(file_size("-wal"), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* SQLite's shared lock: a read lock on bytes 2 to 511
		 * after the pending byte (1 GiB) of the file. */
		int fd = open(path, O_RDONLY);
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET,
				   .l_start = 0x40000002, .l_len = 510};
		if (fd < 0 || fcntl(fd, F_GETLK, &fl) || fl.l_type == F_UNLCK)
			_exit(3);
		close(fd);
		msim_db_t *other;
		if (msim_db_open(path, &other, why, sizeof(why)))
			_exit(2);
		msim_db_close(other);
		_exit(0);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_ge(file_size("-wal"), 0);
	store_one(db, 8192);
	msim_db_close(db);
	ck_assert_int_eq(query_int("SELECT count(*) FROM runs"), 2);
}
END_TEST

/* Stores n runs of 2,000 samples each through db, whose commits do not
 * checkpoint (a sweep's worker). */
static void
store_batch(msim_db_t *db, int first, int n)
{
	for (int k = first; k < first + n; k++) {
		msim_timeline_t tl;
		ck_assert_int_eq(msim_timeline_init(&tl, 2000), 0);
		for (int i = 0; i < 2000; i++)
			msim_timeline_add(&tl, &(msim_sample_t){
				.request = (uint64_t)i, .allocated = 3 * i + k,
				.reserved = 5 * i, .active = 3 * i + k});
		char hash[16];
		snprintf(hash, sizeof(hash), "r%d", k);
		store_timeline(db, hash, 2000, &tl);
	}
}

/*
 * msim_db_restart_wal() (a sweep's parent, while its workers store runs):
 * the WAL is copied whole and starts over, so the runs stored next
 * overwrite it from its start instead of making it longer; with truncate
 * it is emptied.  The writer lock is taken once around it.  Without it,
 * the same runs make the WAL longer (the control).
 */
START_TEST(test_restart_wal)
{
	msim_db_t *w, *ck;
	char why[256];
	ck_assert_int_eq(msim_db_open(path, &w, why, sizeof(why)), 0);
	msim_db_defer_checkpoints(w);
	ck_assert_int_eq(msim_db_open(path, &ck, why, sizeof(why)), 0);
	wl_count_t c = {0};
	msim_db_set_writer_lock(ck, wl_lock, wl_unlock, &c);
	store_batch(w, 0, 6);
	off_t first = file_size("-wal");
	ck_assert_int_gt(first, 100000);
	/* The control: three more runs make the WAL longer. */
	store_batch(w, 6, 3);
	off_t grown = file_size("-wal");
	ck_assert_int_gt(grown, first);
	ck_assert_int_eq(msim_db_restart_wal(ck, false), 0);
	ck_assert_int_eq(c.locks, 1);
	ck_assert_int_eq(c.unlocks, 1);
	ck_assert_int_eq(file_size("-wal"), grown); /* kept, to be reused */
	store_batch(w, 9, 3);
	ck_assert_int_eq(file_size("-wal"), grown);
	ck_assert_int_eq(msim_db_restart_wal(ck, true), 0);
	ck_assert_int_eq(c.locks, 2);
	ck_assert_int_eq(c.unlocks, 2);
	ck_assert_int_eq(file_size("-wal"), 0);
	store_batch(w, 12, 1);
	ck_assert_int_gt(file_size("-wal"), 0);
	ck_assert_int_lt(file_size("-wal"), first);
	msim_db_close(w);
	msim_db_close(ck);
	ck_assert_int_eq(file_size("-wal"), -1);
	ck_assert_int_eq(query_int("SELECT count(*) FROM runs"), 13);
	ck_assert_int_eq(query_int("SELECT count(*) FROM timeline"), 13 * 2000);
	ck_assert_int_eq(query_int("SELECT sum(allocated_bytes) FROM"
				   " timeline"),
			 13 * 3 * (2000 * 1999 / 2) + 2000 * (13 * 12 / 2));
	ck_assert_int_eq(query_int("SELECT count(*) FROM"
				   " pragma_integrity_check WHERE"
				   " integrity_check <> 'ok'"), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("results");
	TCase *tc = tcase_create("results");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_store_and_read_back);
	tcase_add_test(tc, test_bad_database_files);
	tcase_add_test(tc, test_locked_database);
	tcase_add_test(tc, test_read_calls);
	tcase_add_test(tc, test_packed_text);
	tcase_add_test(tc, test_failed_settings);
	tcase_add_test(tc, test_packed_rows);
	tcase_add_test(tc, test_wal_frames_at_commit);
	tcase_add_test(tc, test_writer_lock);
	tcase_add_test(tc, test_new_database);
	tcase_add_test(tc, test_new_database_keeps_its_lock);
	tcase_add_test(tc, test_restart_wal);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
