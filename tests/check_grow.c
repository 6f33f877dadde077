/* sim/grow.h: capacities double from the first one, only when the elements
 * do not fit; new elements are zeroed when asked; and a size that would
 * overflow size_t is MSIM_ENOMEM with the array and capacity as they were. */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "sim/error.h"
#include "sim/grow.h"

START_TEST(test_grow_doubles_from_first)
{
	uint32_t *v = NULL;
	size_t cap = 0;
	ck_assert_int_eq(MSIM_GROW(v, cap, 1, 16), 0);
	ck_assert_uint_eq(cap, 16);
	ck_assert_ptr_nonnull(v);
	v[15] = 7;
	uint32_t *was = v;
	ck_assert_int_eq(MSIM_GROW(v, cap, 16, 16), 0); /* fits: no change */
	ck_assert_ptr_eq(v, was);
	ck_assert_uint_eq(cap, 16);
	ck_assert_int_eq(MSIM_GROW(v, cap, 17, 16), 0);
	ck_assert_uint_eq(cap, 32);
	ck_assert_int_eq(MSIM_GROW(v, cap, 100, 16), 0); /* 32 -> 64 -> 128 */
	ck_assert_uint_eq(cap, 128);
	ck_assert_uint_eq(v[15], 7);
	free(v);
}
END_TEST

START_TEST(test_grow_zero_clears_only_the_new)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	ck_assert_int_eq(MSIM_GROW_ZERO(v, cap, 3, 4), 0);
	ck_assert_uint_eq(cap, 4);
	for (size_t i = 0; i < cap; i++) {
		ck_assert_uint_eq(v[i], 0);
		v[i] = i + 1;
	}
	ck_assert_int_eq(MSIM_GROW_ZERO(v, cap, 9, 4), 0);
	ck_assert_uint_eq(cap, 16);
	for (size_t i = 0; i < cap; i++)
		ck_assert_uint_eq(v[i], i < 4 ? i + 1 : 0);
	free(v);
}
END_TEST

START_TEST(test_grow_overflow_keeps_the_array)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	ck_assert_int_eq(MSIM_GROW(v, cap, 10, 16), 0);
	v[9] = 42;
	uint64_t *was = v;
	/* Doubling past SIZE_MAX, then elements past SIZE_MAX bytes. */
	ck_assert_int_eq(MSIM_GROW(v, cap, SIZE_MAX, 16), MSIM_ENOMEM);
	ck_assert_int_eq(MSIM_GROW(v, cap, SIZE_MAX / 4, 16), MSIM_ENOMEM);
	ck_assert_ptr_eq(v, was);
	ck_assert_uint_eq(cap, 16);
	ck_assert_uint_eq(v[9], 42);
	free(v);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("grow");
	TCase *tc = tcase_create("grow");
	tcase_add_test(tc, test_grow_doubles_from_first);
	tcase_add_test(tc, test_grow_zero_clears_only_the_new);
	tcase_add_test(tc, test_grow_overflow_keeps_the_array);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
