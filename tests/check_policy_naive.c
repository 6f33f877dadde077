/* naive: one cudaMalloc per request at the driver's page size. */
#include <config.h>

#include "tests/policytest.h"

START_TEST(test_naive_one_segment_per_request)
{
	setup("naive", "");
	A(0, 1000);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 2 * MB);
	ck_assert_int_eq(CUR(st, allocated_bytes), 1024);
	ck_assert_int_eq(CUR(st, requested_bytes), 1000);
	A(1, 3 * MB);
	A(2, 2 * MB);
	st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 8 * MB);
	ck_assert_uint_eq(event_size(1), 4 * MB);
	ck_assert_uint_eq(event_size(2), 2 * MB);
	F(0);
	F(1);
	st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 2 * MB);
	ck_assert_int_eq(st.num_device_alloc, 3);
	ck_assert_int_eq(st.num_device_free, 2);
	ck_assert_int_eq(PEAK(st, reserved_bytes), 8 * MB);
	teardown();
}
END_TEST

START_TEST(test_naive_page_size)
{
	setup("naive", "page_size_kb:4096");
	A(0, 3 * MB);
	A(1, 5 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 12 * MB);
	uint64_t largest, total;
	msim_policy_free_info(pol, &largest, &total);
	ck_assert_uint_eq(total, 4 * MB); /* 1 + 3 MiB of tails */
	ck_assert_uint_eq(largest, 3 * MB);
	teardown();
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_naive_one_segment_per_request);
	tcase_add_test(tc, test_naive_page_size);
}

int
main(void)
{
	return run_suite("policy_naive", add);
}
