/* The latency model: the built-in table is the measured CSV, and the
 * interpolation between and past the measured sizes. */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/error.h"
#include "sim/latency.h"
#include "tests/testutil.h"

START_TEST(test_builtin_is_the_csv)
{
	msim_latency_t a, b;
	char why[256];
	msim_latency_h200(&a);
	ck_assert_msg(msim_latency_load(&b, test_data("cuda_latency_h200.csv"),
					why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(a.n, b.n);
	for (size_t i = 0; i < a.n; i++) {
		ck_assert_uint_eq(a.size[i], b.size[i]);
		for (int k = 0; k < MSIM_NLAT; k++)
			ck_assert_double_eq(a.us[k][i], b.us[k][i]);
	}
}
END_TEST

START_TEST(test_interpolation)
{
	msim_latency_t l;
	msim_latency_h200(&l);
	ck_assert_double_eq(msim_latency_us(&l, MSIM_LAT_MALLOC, 1), 42.15);
	ck_assert_double_eq(msim_latency_us(&l, MSIM_LAT_MALLOC, 2097152),
			    40.76);
	/* halfway between 1 GiB (146.03) and 4 GiB (257.41) in bytes */
	ck_assert_double_eq_tol(msim_latency_us(&l, MSIM_LAT_MALLOC,
						UINT64_C(2684354560)),
				(146.03 + 257.41) / 2, 1e-9);
	ck_assert_double_eq(msim_latency_us(&l, MSIM_LAT_FREE,
					    UINT64_C(1) << 40), 9980.69);
	ck_assert_double_eq(msim_latency_us(&l, 99, 512), 0.0);
}
END_TEST

START_TEST(test_bad_table_refused)
{
	msim_latency_t l;
	char why[256];
	ck_assert_int_eq(msim_latency_load(&l, test_data("async.tsv"), why,
					   sizeof(why)), MSIM_EFORMAT);
	ck_assert_int_eq(msim_latency_load(&l, "/nonexistent/x.csv", why,
					   sizeof(why)), MSIM_EIO);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("latency");
	TCase *tc = tcase_create("model");
	tcase_add_test(tc, test_builtin_is_the_csv);
	tcase_add_test(tc, test_interpolation);
	tcase_add_test(tc, test_bad_table_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
