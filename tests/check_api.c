/*
 * The C API (lib/memsim.h) never crashes its caller: every function given
 * NULL, a closed run or a pointer that is no run returns the error the
 * header names (or 0, NULL, a message), and closing twice is harmless,
 * also once a new run took the closed run's place.  Written against
 * memsim.h alone and linked to libmemsim as a user's program is.
 */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memsim.h"
#include "testutil.h"

static char trace[4096];

static void
setup(void)
{
	snprintf(trace, sizeof(trace), "%s",
		 test_data("traces/gpt2_varlen.csv"));
}

/* Every function taking a run, given h, returns code (or 0 / NULL). */
static void
all_refuse(memsim_run_t *h, int code)
{
	int64_t v = 7;
	double d;
	const char *t;
	memsim_point_t pt;
	ck_assert_int_eq(memsim_set_policy(h, "bfc", NULL), code);
	ck_assert_int_eq(memsim_set_option(h, "cap", "1GiB"), code);
	ck_assert_int_eq(memsim_replay(h), code);
	ck_assert_uint_eq(memsim_count(h), 0);
	ck_assert_ptr_null(memsim_name(h, 0));
	ck_assert_int_eq(memsim_get_kind(h, "requests"), code);
	ck_assert_int_eq(memsim_get_int(h, "requests", &v), code);
	ck_assert_int_eq(memsim_get_real(h, "requests", &d), code);
	ck_assert_int_eq(memsim_get_text(h, "policy", &t), code);
	ck_assert_uint_eq(memsim_timeline_len(h), 0);
	ck_assert_int_eq(memsim_timeline_get(h, 0, &pt), code);
	ck_assert_int_eq(memsim_store(h, "x.db", &v), code);
	ck_assert_int_eq(v, -1);
	ck_assert_ptr_nonnull(memsim_errmsg(h));
	memsim_close(h);
	memsim_close(h);
}

START_TEST(test_api_null_run)
{
	all_refuse(NULL, MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(memsim_errmsg(NULL), "no run"));
}
END_TEST

START_TEST(test_api_not_a_run)
{
	/* A pointer memsim_open() did not give: an address of the caller's. */
	int x;
	all_refuse((memsim_run_t *)(void *)&x, MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(memsim_errmsg((memsim_run_t *)(void *)&x),
				     "not a run"));
}
END_TEST

START_TEST(test_api_null_arguments)
{
	memsim_run_t *r;
	int64_t v;
	memsim_point_t pt;
	ck_assert_int_eq(memsim_open(NULL, trace), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_load(NULL, "x.db", 1), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_open(&r, NULL), MEMSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(memsim_errmsg(r), "no trace"));
	memsim_close(r);
	ck_assert_int_eq(memsim_open(&r, trace), 0);
	ck_assert_int_eq(memsim_set_policy(r, NULL, NULL), MEMSIM_EPOLICY);
	ck_assert_int_eq(memsim_set_option(r, NULL, "1"), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_set_option(r, "cap", NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_replay(r), 0);
	ck_assert_int_eq(memsim_get_int(r, "requests", NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_real(r, "requests", NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_text(r, "policy", NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_int(r, NULL, &v), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_kind(r, NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_timeline_get(r, 0, NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_store(r, NULL, NULL), MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_get_int(r, "requests", &v), 0);
	ck_assert_int_gt(v, 0);
	ck_assert_int_eq(memsim_timeline_get(r, 0, &pt), 0);
	memsim_close(r);
	size_t n = 5;
	const char *msg;
	ck_assert_int_eq(memsim_list_runs("x.db", NULL, 0, NULL, &msg),
			 MEMSIM_EINVAL);
	ck_assert_str_ne(msg, "");
	ck_assert_int_eq(memsim_list_runs("x.db", NULL, 4, &n, NULL),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_list_runs(NULL, NULL, 0, &n, NULL),
			 MEMSIM_EINVAL);
	ck_assert_int_eq(memsim_load(&r, NULL, 1), MEMSIM_EINVAL);
	memsim_close(r);
}
END_TEST

START_TEST(test_api_closed_run)
{
	memsim_run_t *r, *r2;
	int64_t v;
	ck_assert_int_eq(memsim_open(&r, trace), 0);
	ck_assert_int_eq(memsim_replay(r), 0);
	memsim_close(r);
	all_refuse(r, MEMSIM_ESTATE); /* closes r twice more */
	ck_assert_str_eq(memsim_errmsg(r), "the run is closed");
	/* A new run may take r's place: r still names no run, and closing
	 * r again leaves the new one be. */
	ck_assert_int_eq(memsim_open(&r2, trace), 0);
	memsim_close(r);
	ck_assert_int_eq(memsim_replay(r2), 0);
	ck_assert_int_eq(memsim_get_int(r2, "requests", &v), 0);
	ck_assert_int_eq(memsim_get_int(r, "requests", &v), MEMSIM_ESTATE);
	memsim_close(r2);
	memsim_close(r2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("handles");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_api_null_run);
	tcase_add_test(tc, test_api_not_a_run);
	tcase_add_test(tc, test_api_null_arguments);
	tcase_add_test(tc, test_api_closed_run);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
