/*
 * The job (lab/job.h): a hand-made trace opened, replayed and stored.
 * Two 1 MiB blocks fill one 2 MiB small-pool segment (kSmallBuffer); the
 * first is freed by the program (free_requested) before a third is asked
 * for and given back to the pool (free_completed) after it, so the third
 * needs a second segment either way, while the bytes allocated at the
 * peak depend on whether free_requested rows apply apart (the default:
 * 2 MiB) or not (--requests-only: 3 MiB).  Errors name the part of the
 * setting at fault; a setting is stored once under its key.
 */
#include <config.h>

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/job.h"
#include "sim/error.h"
#include "sim/results.h"

#define MiB (1024 * 1024)

static char trace[64], dbpath[64];

static void
setup(void)
{
	snprintf(trace, sizeof(trace), "/tmp/memsim-job-XXXXXX");
	int fd = mkstemp(trace);
	ck_assert_int_ge(fd, 0);
	FILE *fp = fdopen(fd, "w");
	fprintf(fp, "action,addr,size\n"
		"alloc,4096,1048576\n"
		"alloc,8392704,1048576\n"
		"free_requested,4096,1048576\n"
		"alloc,16781312,1048576\n"
		"free_completed,4096,1048576\n");
	fclose(fp);
	snprintf(dbpath, sizeof(dbpath), "/tmp/memsim-jobdb-XXXXXX");
	close(mkstemp(dbpath));
	unlink(dbpath);
}

static void
teardown(void)
{
	char p[96];
	unlink(trace);
	unlink(dbpath);
	snprintf(p, sizeof(p), "%s-wal", dbpath);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", dbpath);
	unlink(p);
}

/* Opens and runs spec; fails the test on an error. */
static msim_job_t *
job_run(const msim_job_spec_t *spec, bool store)
{
	msim_job_t *job;
	msim_job_err_t err;
	int rc = msim_job_open(spec, store, &job, &err);
	ck_assert_msg(rc == 0, "open: %s", err.msg);
	rc = msim_job_run(job, &err);
	ck_assert_msg(rc == 0, "run: %s", err.msg);
	return job;
}

START_TEST(test_deferred_frees)
{
	msim_job_spec_t spec = {.trace = trace, .policy = "pytorch"};
	msim_job_t *job = job_run(&spec, false);
	const msim_job_result_t *r = msim_job_result(job);
	ck_assert_uint_eq(r->sum.requests, 4); /* 3 allocs, 1 free */
	ck_assert_int_eq(r->st.allocated_bytes[0].peak, 2 * MiB);
	ck_assert_int_eq(r->st.reserved_bytes[0].peak, 4 * MiB);
	ck_assert_uint_eq(r->devtime.mallocs, 2);
	ck_assert_uint_eq(r->devtime.frees, 0);
	ck_assert(r->devtime.us > 0);
	ck_assert_str_eq(r->trace_format, "csv");
	ck_assert_str_eq(r->params, "");
	ck_assert_str_eq(r->addresses, "model");
	ck_assert_uint_eq(r->cap_bytes, 0);
	ck_assert_uint_eq(strlen(r->trace_hash), 16);
	msim_job_destroy(job);

	spec.requests_only = true;
	job = job_run(&spec, false);
	r = msim_job_result(job);
	ck_assert_uint_eq(r->sum.requests, 4);
	ck_assert_int_eq(r->st.allocated_bytes[0].peak, 3 * MiB);
	ck_assert_int_eq(r->st.reserved_bytes[0].peak, 4 * MiB);
	msim_job_destroy(job);
}
END_TEST

START_TEST(test_cap)
{
	/* A 3 MiB cap: the second segment does not fit, the third alloc
	 * (request 2) runs out of memory. */
	msim_job_spec_t spec = {.trace = trace, .policy = "pytorch",
				.cap = 3 * MiB, .capacity = 64 * MiB};
	msim_job_t *job = job_run(&spec, false);
	const msim_job_result_t *r = msim_job_result(job);
	ck_assert_uint_eq(r->cap_bytes, 3 * MiB);
	ck_assert_int_eq(r->sum.oom_request, 2);
	ck_assert_int_eq(r->st.reserved_bytes[0].peak, 2 * MiB);
	msim_job_destroy(job);
	/* The same cap as a fraction. */
	spec.cap = 0;
	spec.fraction = 0.5;
	job = job_run(&spec, false);
	ck_assert_uint_eq(msim_job_result(job)->cap_bytes, 32 * MiB);
	ck_assert_int_eq(msim_job_result(job)->sum.oom_request, -1);
	msim_job_destroy(job);
}
END_TEST

static int64_t
count_sql(const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	int64_t n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return n;
}

static int64_t
count_runs(const char *where)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM runs WHERE %s", where);
	return count_sql(sql);
}

START_TEST(test_store_once)
{
	char why[512];
	msim_db_t *db;
	ck_assert_int_eq(msim_db_open(dbpath, &db, why, sizeof(why)), 0);
	msim_job_spec_t spec = {.trace = trace, .policy = "pytorch"};
	msim_job_err_t err;
	int64_t id1, id2, id3;
	int existed;
	msim_job_t *job = job_run(&spec, true);
	ck_assert_int_eq(msim_job_store(job, db, MSIM_DB_REPLACE, 0, &id1,
					&existed, &err), 0);
	ck_assert_int_eq(existed, 0);
	msim_job_destroy(job);
	/* The same setting again: recognised, kept. */
	job = job_run(&spec, true);
	ck_assert_int_eq(msim_job_store(job, db, MSIM_DB_SKIP, 0, &id2,
					&existed, &err), 0);
	ck_assert_int_eq(existed, 1);
	ck_assert_int_eq(id2, id1);
	msim_job_destroy(job);
	/* Requests only: another experiment, another key. */
	spec.requests_only = true;
	job = job_run(&spec, true);
	ck_assert_int_eq(msim_job_store(job, db, MSIM_DB_SKIP, 0, &id3,
					&existed, &err), 0);
	ck_assert_int_eq(existed, 0);
	ck_assert_int_ne(id3, id1);
	msim_job_destroy(job);
	msim_db_close(db);
	ck_assert_int_eq(count_runs("setting_key LIKE "
				    "'simulated|%|pytorch||0|model|'"), 1);
	ck_assert_int_eq(count_runs("setting_key LIKE "
				    "'%|model|replay=requests'"), 1);
	/* The row has what run stores: capacity, metadata, peak blocks. */
	ck_assert_int_eq(count_runs("capacity_bytes > 0 AND id IN (SELECT "
				    "run_id FROM run_meta WHERE key = "
				    "'modelled_device_ms') AND id IN (SELECT "
				    "run_id FROM peak_blocks)"), 2);
}
END_TEST

/*
 * The blocks at peak of a job replayed from a trace read once (a sweep's)
 * whichever request the copies start from (spec.blocks_from), against a
 * job that reads its file.  Under a 40 MiB cap three 12 MiB segments
 * (requests 0-2) reach the peak, 36 MiB, at request 2; two are freed and
 * cached, and a 24 MiB request (5) finds no room: release_cached_blocks()
 * frees both cached segments and the retry brings reserved back to 36 MiB
 * without passing the peak.  Copies from request 3 on take the blocks
 * after request 5 (12 and 24 MiB), not at the peak: the job must replay
 * again up to request 2, as it must when no copy was taken (from 6).
 */
START_TEST(test_blocks_from)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/memsim-jobpk-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *fp = fdopen(fd, "w");
	fprintf(fp, "action,addr,size\n"
		"alloc,4096,12582912\n"
		"alloc,8392704,12582912\n"
		"alloc,16781312,12582912\n"
		"free_completed,4096,12582912\n"
		"free_completed,8392704,12582912\n"
		"alloc,33558528,25165824\n");
	fclose(fp);
	char why[512];
	msim_db_t *db;
	ck_assert_int_eq(msim_db_open(dbpath, &db, why, sizeof(why)), 0);
	msim_job_spec_t spec = {.trace = path, .policy = "pytorch",
				.cap = 40 * MiB, .capacity = 64 * MiB};
	msim_trace_options_t topt = msim_job_trace_options(&spec);
	msim_trace_cache_t cache = {0};
	msim_trace_cache_load(&cache, path, &topt, 1000);
	ck_assert_ptr_nonnull(cache.trace);
	static const uint64_t from[] = {0, 1, 2, 3, 5, 6, 1000};
	for (size_t k = 0; k <= sizeof(from) / sizeof(from[0]); k++) {
		/* The last: from the file, a copy at each new peak. */
		bool cached = k < sizeof(from) / sizeof(from[0]);
		spec.cache = cached ? &cache : NULL;
		spec.blocks_from = cached ? from[k] : 0;
		msim_job_t *job = job_run(&spec, true);
		const msim_job_result_t *r = msim_job_result(job);
		ck_assert_int_eq(r->st.reserved_bytes[0].peak, 36 * MiB);
		ck_assert_int_eq(r->st.num_alloc_retries, 1);
		ck_assert_int_eq(r->st.reserved_bytes[0].current, 36 * MiB);
		int64_t id;
		int existed;
		msim_job_err_t err;
		ck_assert_int_eq(msim_job_store(job, db, MSIM_DB_INSERT, 0, &id,
						&existed, &err), 0);
		msim_job_destroy(job);
	}
	msim_db_close(db);
	msim_trace_cache_clear(&cache);
	unlink(path);
	size_t runs = sizeof(from) / sizeof(from[0]) + 1;
	ck_assert_int_eq(count_sql("SELECT count(*) FROM runs"), runs);
	/* Each run: the three 12 MiB blocks, allocated, at the same three
	 * addresses. */
	ck_assert_int_eq(count_sql("SELECT count(*) FROM peak_blocks WHERE "
				   "size = 12582912 AND state = 'allocated'"),
			 3 * runs);
	ck_assert_int_eq(count_sql("SELECT count(*) FROM peak_blocks"),
			 3 * runs);
	ck_assert_int_eq(count_sql("SELECT count(DISTINCT addr) FROM "
				   "peak_blocks"), 3);
}
END_TEST

/* Opens spec expecting an error about part, with text in its message. */
static void
expect_part(const msim_job_spec_t *spec, int part, const char *text)
{
	msim_job_t *job;
	msim_job_err_t err;
	ck_assert_int_ne(msim_job_open(spec, false, &job, &err), 0);
	ck_assert_ptr_null(job);
	ck_assert_int_eq(err.part, part);
	ck_assert_msg(strstr(err.msg, text), "'%s' lacks '%s'", err.msg,
		      text);
}

START_TEST(test_errors)
{
	msim_job_spec_t spec = {.trace = trace, .policy = "nope"};
	expect_part(&spec, MSIM_JOB_EPOLICY, "unknown policy 'nope'");
	spec.policy = "pytorch";
	spec.conf = "max_split_size_mb:2";
	expect_part(&spec, MSIM_JOB_EPARAMS, "max_split_size_mb");
	spec.conf = NULL;
	spec.cap = 2 * MiB;
	spec.capacity = MiB;
	expect_part(&spec, MSIM_JOB_ECAP, "more than the device's");
	spec.capacity = 0;
	spec.fraction = 0.5;
	expect_part(&spec, MSIM_JOB_ECAP, "not both");
	spec.cap = 0;
	spec.fraction = 0;
	spec.trace = "/nonexistent/trace.csv";
	expect_part(&spec, MSIM_JOB_EINPUT, "/nonexistent/trace.csv");
	spec.trace = "model:arch=gpt2,batch=x";
	expect_part(&spec, MSIM_JOB_EINPUT, "model spec: batch");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("job");
	TCase *tc = tcase_create("job");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_deferred_frees);
	tcase_add_test(tc, test_cap);
	tcase_add_test(tc, test_store_once);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_blocks_from);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
