/*
 * lab/reproduce.h on the H200's measured runs (tests/data/validate/
 * measured.db, written by validate/run_h200.sh): each simulated afresh
 * and compared.  The 34 torch-mode runs agree on every figure,
 * memory_stats() key and device event; five of the six async ones agree
 * (cuda-async reproduces bert_infer_varlen's peak, not its other
 * figures, docs/cuda-async.md 3.1); the raw runs, compared with naive,
 * do not.
 */
#include <config.h>

#include <check.h>
#include <string.h>
#include <unistd.h>

#include "lab/reproduce.h"
#include "sim/error.h"
#include "testutil.h"

START_TEST(test_reproduce_measured_runs)
{
	/* The runs name their traces from the top of the source tree. */
	char top[4096];
	snprintf(top, sizeof(top), "%s", test_data("../.."));
	ck_assert_int_eq(chdir(top), 0);
	msim_db_t *db;
	char why[1024];
	const char *mdb = "tests/data/validate/measured.db";
	ck_assert_int_eq(msim_db_open_readonly(mdb, &db, why, sizeof(why)),
			 0);
	msim_reproduce_t r;
	ck_assert_msg(msim_reproduce_run(db, &r, why, sizeof(why)) == 0, "%s",
		      why);
	ck_assert_uint_eq(r.n, 46);
	ck_assert_uint_eq(r.exact, 39);
	const msim_reproduce_row_t *t = &r.rows[0];
	ck_assert_int_eq(t->id, 1);
	ck_assert_str_eq(t->mode, "torch");
	ck_assert_str_eq(t->policy, "pytorch");
	ck_assert_str_eq(t->params, "max_split_size_mb:256");
	ck_assert_int_eq(t->meas[0], 38008782848);
	ck_assert_int_eq(t->sim[0], 38008782848);
	ck_assert_int_eq(t->sim[3], 215); /* segment.all.peak */
	ck_assert_int_eq(t->stats_total, 122);
	ck_assert_int_eq(t->stats_equal, 122);
	ck_assert_int_eq(t->events, 1);
	ck_assert(t->exact);
	const msim_reproduce_row_t *raw = &r.rows[34];
	ck_assert_int_eq(raw->id, 35);
	ck_assert_str_eq(raw->mode, "raw");
	ck_assert_str_eq(raw->policy, "naive");
	ck_assert_int_eq(raw->meas[0], 1142947840);
	ck_assert_int_eq(raw->sim[0], 1409286144);
	ck_assert(!raw->have[2]); /* raw measures bytes only */
	ck_assert_int_eq(raw->events, -1);
	ck_assert(!raw->exact);
	const msim_reproduce_row_t *as = &r.rows[39];
	ck_assert_int_eq(as->id, 40);
	ck_assert_str_eq(as->policy, "cuda-async");
	ck_assert_int_eq(as->sim[0], 13925089280);
	ck_assert(as->exact);
	/* A plot to a file it cannot write says so. */
	ck_assert_int_ne(msim_reproduce_plot(&r, "plots", "no", "x.txt", why,
					     sizeof(why)), 0);
	msim_reproduce_clear(&r);
	ck_assert_uint_eq(r.n, 0);
	msim_db_close(db);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("reproduce");
	TCase *tc = tcase_create("reproduce");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_reproduce_measured_runs);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
