/*
 * One line adds a stored field (docs/changing.md): this program is built
 * with its own copy of the results store and of lab/figures.c, compiled
 * with tests/extra_column.h, which adds the column probe_bytes (the peak
 * of allocated bytes plus the requests) to sim/results.h's
 * MSIM_RUN_COLUMNS and nothing else.  The column reaches the schema of a
 * new file, the stored row, the row read back, merge, and the figures of
 * a job and of a stored run (what `memsim run --json`, `report --json`,
 * memsim_load() and Python's memsim.runs() print); a file of the schema
 * before, without it, gains it when opened for writing.
 *
 * The run: the hand-made trace of tests/check_job.c (two 1 MiB blocks,
 * the first freed, a third), 2 MiB allocated at the peak and 4 requests:
 * probe_bytes = 2 MiB + 4 = 2097156.
 */
#include <config.h>

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/figures.h"
#include "lab/job.h"
#include "sim/error.h"
#include "sim/results.h"
#include "tests/testutil.h"

#define PROBE INT64_C(2097156)

static const char *
write_trace(void)
{
	static const char csv[] = "action,addr,size\n"
				  "alloc,4096,1048576\n"
				  "alloc,8392704,1048576\n"
				  "free_requested,4096,1048576\n"
				  "alloc,16781312,1048576\n"
				  "free_completed,4096,1048576\n";
	return write_bytes("t.csv", csv, sizeof(csv) - 1);
}

/* Runs the trace and stores it in a new file at db_path; the job. */
static msim_job_t *
run_and_store(const char *trace, const char *db_path, int64_t *id_out)
{
	msim_job_spec_t spec = {.trace = trace, .policy = "pytorch"};
	msim_job_t *job;
	msim_job_err_t err;
	ck_assert_msg(msim_job_open(&spec, true, &job, &err) == 0, "%s",
		      err.msg);
	ck_assert_msg(msim_job_run(job, &err) == 0, "%s", err.msg);
	char why[512];
	msim_db_t *db;
	ck_assert_msg(msim_db_open(db_path, &db, why, sizeof(why)) == 0, "%s",
		      why);
	int existed;
	ck_assert_msg(msim_job_store(job, db, MSIM_DB_SKIP, 0, id_out,
				     &existed, &err) == 0, "%s", err.msg);
	msim_db_close(db);
	return job;
}

static int64_t
fig_value(const msim_figs_t *f, const char *name)
{
	const msim_fig_t *g = msim_figs_find(f, name);
	ck_assert_msg(g != NULL, "no figure %s", name);
	ck_assert_int_eq(g->kind, MSIM_FIG_INT);
	return g->i;
}

static size_t
fig_index(const msim_figs_t *f, const char *name)
{
	const msim_fig_t *g = msim_figs_find(f, name);
	ck_assert_msg(g != NULL, "no figure %s", name);
	return (size_t)(g - f->v);
}

START_TEST(test_column_in_list)
{
	const msim_db_col_t *col = &msim_db_run_cols[msim_db_run_ncols - 1];
	ck_assert_str_eq(col->name, "probe_bytes");
	ck_assert_str_eq(col->json, "probe_bytes");
	ck_assert_int_eq(col->type, MSIM_COL_INT);
	ck_assert(msim_db_col_nullable(col));
	ck_assert_int_eq(col->show, MSIM_COL_TAIL);
}
END_TEST

START_TEST(test_column_reaches_every_use)
{
	const char *trace = write_trace();
	const char *a = tmp_path("a.db"), *b = tmp_path("b.db");
	int64_t id;
	msim_job_t *job = run_and_store(trace, a, &id);

	/* The job's figures: `memsim run --json`. */
	msim_figs_t f = {0};
	ck_assert_int_eq(msim_figs_job(&f, job), 0);
	ck_assert_int_eq(fig_value(&f, "probe_bytes"), PROBE);
	/* Last of the columns shown after the statistics, before the
	 * figures of the job that are not columns. */
	ck_assert_uint_lt(fig_index(&f, "setting_key"),
			  fig_index(&f, "probe_bytes"));
	ck_assert_uint_eq(fig_index(&f, "probe_bytes") + 1,
			  fig_index(&f, "addr_same"));
	msim_figs_clear(&f);
	msim_job_destroy(job);

	/* The schema of a new file, and the stored row. */
	char why[512];
	msim_db_t *db;
	ck_assert_int_eq(msim_db_open_existing(a, &db, why, sizeof(why)), 0);
	msim_db_run_t r;
	ck_assert_int_eq(msim_db_run_get(db, id, &r), 0);
	ck_assert_int_eq(r.probe_bytes, PROBE);
	ck_assert_int_eq(r.peak_allocated_bytes, 2 * 1048576);
	msim_db_run_clear(&r);
	/* The stored run's figures: report --json, memsim_load(). */
	ck_assert_int_eq(msim_figs_stored(&f, db, id), 0);
	ck_assert_int_eq(fig_value(&f, "probe_bytes"), PROBE);
	msim_figs_clear(&f);
	msim_db_close(db);

	/* Merge copies it. */
	ck_assert_int_eq(msim_db_open(b, &db, why, sizeof(why)), 0);
	int64_t added = 0, skipped = 0;
	ck_assert_msg(msim_db_merge(db, a, &added, &skipped) == 0, "%s",
		      msim_db_errmsg(db));
	ck_assert_int_eq(added, 1);
	int64_t bid;
	ck_assert_int_eq(msim_db_newest_run(db, &bid), 0);
	ck_assert_int_eq(msim_db_run_get(db, bid, &r), 0);
	ck_assert_int_eq(r.probe_bytes, PROBE);
	msim_db_run_clear(&r);
	msim_db_close(db);
}
END_TEST

/* A file of the schema before the column's: its runs table as the
 * schema makes it, less the column.  Opened for writing, it gains the
 * column (no migration written for it) and stores it. */
START_TEST(test_column_added_to_older_file)
{
	const char *a = tmp_path("old.db");
	char why[512];
	msim_db_t *db;
	ck_assert_int_eq(msim_db_open(a, &db, why, sizeof(why)), 0);
	msim_db_close(db);
	sqlite3 *s;
	ck_assert_int_eq(sqlite3_open(a, &s), SQLITE_OK);
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_prepare_v2(s, "SELECT sql FROM sqlite_master"
					    " WHERE name='runs'", -1, &q,
					    NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	char sql[4096];
	snprintf(sql, sizeof(sql), "%s", sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	char *col = strstr(sql, ", probe_bytes INTEGER");
	ck_assert_ptr_nonnull(col);
	memmove(col, col + strlen(", probe_bytes INTEGER"),
		strlen(col + strlen(", probe_bytes INTEGER")) + 1);
	char old[8192];
	snprintf(old, sizeof(old), "DROP TABLE runs; %s;"
		 "UPDATE meta SET value='%d' WHERE key='schema_version';"
		 "PRAGMA user_version=0;", sql, MSIM_DB_SCHEMA_VERSION - 1);
	ck_assert_int_eq(sqlite3_exec(s, old, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(s, "SELECT probe_bytes FROM runs", NULL,
				      NULL, NULL), SQLITE_ERROR);
	sqlite3_close(s);
	int64_t id;
	msim_job_t *job = run_and_store(write_trace(), a, &id);
	msim_job_destroy(job);
	ck_assert_int_eq(msim_db_open_existing(a, &db, why, sizeof(why)), 0);
	msim_db_run_t r;
	ck_assert_int_eq(msim_db_run_get(db, id, &r), 0);
	ck_assert_int_eq(r.probe_bytes, PROBE);
	msim_db_run_clear(&r);
	msim_db_close(db);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("column");
	TCase *tc = tcase_create("column");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_add_test(tc, test_column_in_list);
	tcase_add_test(tc, test_column_reaches_every_use);
	tcase_add_test(tc, test_column_added_to_older_file);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
