/*
 * The results store: a run round-trips through SQLite; a read-only or
 * locked database is a clear error and what it holds stays intact.
 */
#include <config.h>

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	ck_assert_ptr_nonnull(strstr(why, "/nonexistent/dir/x.db"));
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

int
main(void)
{
	Suite *s = suite_create("results");
	TCase *tc = tcase_create("results");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_store_and_read_back);
	tcase_add_test(tc, test_bad_database_files);
	tcase_add_test(tc, test_locked_database);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
