/*
 * lab/tune.h on a hand-made trace where max_split_size_mb decides:
 * A (100 MiB) is allocated and freed, then B (20 MiB) and C (90 MiB).
 * With the defaults B splits A's cached segment and C needs a segment of
 * its own: 190 MiB, out of memory under a 150 MiB cap (at request 3).
 * With max_split_size_mb:64, A's block is oversize: B, under the limit,
 * may not split it and gets its own 20 MiB segment, and C (over the
 * limit, within kLargeBuffer of it) takes it whole: 120 MiB reserved,
 * and 120 MiB allocated, the whole block counted (get_free_block;
 * docs/pytorch-allocator.md).  Under 100 MiB both run out of memory: B's
 * segment makes release_cached_blocks() free A's, then C finds no room.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "lab/tune.h"
#include "sim/error.h"
#include "sim/results.h"
#include "testutil.h"

#define MIB 1048576LL

static const char *
split_trace(void)
{
	static const char csv[] = "action,addr,size\n"
				  "alloc,4096,104857600\n"
				  "free_completed,4096,104857600\n"
				  "alloc,8192,20971520\n"
				  "alloc,12288,94371840\n";
	write_bytes("split.csv", csv, sizeof(csv) - 1);
	return tmp_keep("split.csv");
}

START_TEST(test_tune_picks_stores_and_reads_back)
{
	const char *trace = split_trace(), *db = tmp_keep("tune.db");
	const char *grid[] = {"max_split_size_mb=none,64"};
	msim_tune_spec_t s = {
		.trace = trace, .cap = 150 * MIB, .db_path = db, .grid = grid,
		.ngrid = 1, .jobs = 0, .tmpdir = tmpdir_path(),
	};
	msim_tune_result_t r;
	char why[2048];
	ck_assert_msg(msim_tune_run(&s, &r, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(r.searched, 2);
	ck_assert_int_eq(r.n_oom, 1);
	ck_assert(r.fits);
	ck_assert_str_eq(r.keys, "");
	ck_assert_str_eq(r.store_err, "");
	ck_assert_str_eq(r.def.params, "");
	ck_assert_int_eq(r.def.oom_request, 3);
	ck_assert_str_eq(r.best.params, "max_split_size_mb:64");
	ck_assert_int_eq(r.best.peak_reserved, 120 * MIB);
	ck_assert_int_eq(r.best.peak_allocated, 120 * MIB);
	ck_assert_int_eq(r.best.oom_request, -1);
	ck_assert_int_eq(r.tune_id, 1);
	ck_assert_int_eq(r.def_id, 1);
	ck_assert_int_eq(r.best_id, 2);
	/* Stored: the two runs of one tune sweep. */
	msim_db_t *d;
	ck_assert_int_eq(msim_db_open_readonly(db, &d, why, sizeof(why)), 0);
	msim_db_run_t run;
	ck_assert_int_eq(msim_db_run_get(d, 2, &run), 0);
	ck_assert_str_eq(run.params, "max_split_size_mb:64");
	ck_assert_int_eq(run.peak_reserved_bytes, 120 * MIB);
	msim_db_run_clear(&run);
	msim_db_close(d);
	/* Run again: the same runs, nothing new stored. */
	ck_assert_int_eq(msim_tune_run(&s, &r, why, sizeof(why)), 0);
	ck_assert_int_eq(r.tune_id, 1);
	ck_assert_int_eq(r.best_id, 2);
}
END_TEST

START_TEST(test_tune_none_fits)
{
	const char *trace = split_trace(), *db = tmp_keep("tune.db");
	const char *grid[] = {"max_split_size_mb=none,64"};
	msim_tune_spec_t s = {
		.trace = trace, .cap = 100 * MIB, .db_path = db, .grid = grid,
		.ngrid = 1, .tmpdir = tmpdir_path(),
	};
	msim_tune_result_t r;
	char why[2048];
	ck_assert_int_eq(msim_tune_run(&s, &r, why, sizeof(why)), 0);
	ck_assert(!r.fits);
	ck_assert_int_eq(r.n_oom, 2);
	ck_assert_int_eq(r.def_id, 1);
	ck_assert_int_eq(r.best_id, -1);
	/* A bad axis fails before any work. */
	const char *bad[] = {"max_split_size_mb=lots"};
	s.grid = bad;
	ck_assert_int_ne(msim_tune_run(&s, &r, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "max_split_size_mb"));
}
END_TEST

START_TEST(test_tune_grid_set)
{
	const char *grid[4];
	size_t n = 0;
	for (size_t k = 0; k < MSIM_TUNE_NGRID; k++)
		grid[n++] = msim_tune_grid[k];
	ck_assert_int_eq(msim_tune_grid_set(grid, &n, 4,
					    "max_split_size_mb=none,64"), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(grid[0], "max_split_size_mb=none,64");
	ck_assert_int_eq(msim_tune_grid_set(grid, &n, 4, "batch=8,16"), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(msim_tune_grid_set(grid, &n, 4, "seq=1,2"), -1);
	ck_assert_int_eq(msim_tune_grid_set(grid, &n, 4, "batch=4"), 0);
	ck_assert_str_eq(grid[3], "batch=4");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("tune");
	TCase *tc = tcase_create("tune");
	tcase_add_checked_fixture(tc, tmpdir_setup, tmpdir_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_tune_picks_stores_and_reads_back);
	tcase_add_test(tc, test_tune_none_fits);
	tcase_add_test(tc, test_tune_grid_set);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
