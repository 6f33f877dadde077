/* The time model: the shipped H200 calibration, interpolation, errors. */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/error.h"
#include "sim/timemodel.h"
#include "testutil.h"

START_TEST(test_h200_calibration)
{
	msim_timemodel_t *tm;
	char why[256];
	ck_assert_int_eq(msim_timemodel_load(test_data("cuda_latency_h200.csv"),
					     &tm, why, sizeof(why)), 0);
	/* At measured sizes: the measured medians. */
	ck_assert_double_eq_tol(msim_timemodel_us(tm, MSIM_LAT_MALLOC, 512),
				42.15, 1e-9);
	ck_assert_double_eq_tol(msim_timemodel_us(tm, MSIM_LAT_FREE, 20971520),
				49.39, 1e-9);
	ck_assert_double_eq_tol(msim_timemodel_us(tm, MSIM_LAT_MALLOC_ASYNC,
						  1073741824), 1170.30, 1e-9);
	/* Below the smallest: the smallest. */
	ck_assert_double_eq_tol(msim_timemodel_us(tm, MSIM_LAT_MALLOC, 1),
				42.15, 1e-9);
	/* Halfway in log2 between 64 MiB and 256 MiB (128 MiB). */
	ck_assert_double_eq_tol(msim_timemodel_us(tm, MSIM_LAT_FREE,
						  134217728),
				(82.38 + 157.52) / 2, 1e-9);
	/* Beyond the largest: never below the largest measured. */
	ck_assert(msim_timemodel_us(tm, MSIM_LAT_MALLOC,
				    UINT64_C(34359738368)) >= 49081.02);
	msim_seg_event_t ev[] = {
		{0, 0, 20971520, MSIM_SEG_ALLOC},
		{1, 0, 20971520, MSIM_SEG_ALLOC},
		{2, 0, 20971520, MSIM_SEG_FREE},
		{3, 0, 512, MSIM_SEG_OOM},
	};
	msim_devtime_t dt;
	msim_timemodel_events(tm, ev, 4, &dt);
	ck_assert_uint_eq(dt.mallocs, 2);
	ck_assert_uint_eq(dt.frees, 1);
	ck_assert_double_eq_tol(dt.us, 2 * 42.99 + 49.39, 1e-9);
	msim_timemodel_destroy(tm);
}
END_TEST

/* The built-in calibration is the measured file, point for point. */
START_TEST(test_builtin_is_the_csv)
{
	msim_timemodel_t *a, *b;
	char why[256];
	ck_assert_int_eq(msim_timemodel_h200(&a), 0);
	ck_assert_int_eq(msim_timemodel_load(test_data("cuda_latency_h200.csv"),
					     &b, why, sizeof(why)), 0);
	for (uint64_t size = 256; size < (UINT64_C(1) << 36); size *= 3)
		for (int k = 0; k < MSIM_NLAT; k++)
			ck_assert_double_eq(msim_timemodel_us(a, k, size),
					    msim_timemodel_us(b, k, size));
	msim_timemodel_destroy(a);
	msim_timemodel_destroy(b);
}
END_TEST

START_TEST(test_bad_calibration)
{
	char path[] = "/tmp/memsim-cal-XXXXXX";
	int fd = mkstemp(path);
	const char *text = "size_bytes,malloc_us,free_us,malloc_async_us,"
			   "free_async_us\n1024,1,1,1,1\n512,1,1,1,1\n";
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	msim_timemodel_t *tm;
	char why[256];
	ck_assert_int_eq(msim_timemodel_load(path, &tm, why, sizeof(why)),
			 MSIM_EFORMAT);
	ck_assert_msg(strstr(why, ":3: sizes must be positive and increasing"),
		      "%s", why);
	unlink(path);
	ck_assert_int_eq(msim_timemodel_load("/nonexistent.csv", &tm, why,
					     sizeof(why)), MSIM_EIO);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("timemodel");
	TCase *tc = tcase_create("timemodel");
	tcase_add_test(tc, test_h200_calibration);
	tcase_add_test(tc, test_builtin_is_the_csv);
	tcase_add_test(tc, test_bad_calibration);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
