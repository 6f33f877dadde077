/* pool: RMM's pool_memory_resource: growth, best fit, exact splits. */
#include <config.h>

#include "tests/policytest.h"

START_TEST(test_pool_grows_by_its_size)
{
	setup("pool", "");
	A(0, 1000); /* empty pool: grows by max(1024, 0) */
	A(1, 1000); /* max(1024, 1024) */
	A(2, 5000); /* max(5120, 2048) */
	A(3, 100);  /* max(256, 7168) */
	ck_assert_uint_eq(event_size(0), 1024);
	ck_assert_uint_eq(event_size(1), 1024);
	ck_assert_uint_eq(event_size(2), 5120);
	ck_assert_uint_eq(event_size(3), 7168);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 14336);
	ck_assert_int_eq(CUR(st, allocated_bytes), 1024 + 1024 + 5120 + 256);
	F(1);
	ck_assert_uint_eq(A(4, 512), addr[1]); /* best fit, split */
	ck_assert_uint_eq(A(5, 512), addr[1] + 512);
	teardown();
}
END_TEST

START_TEST(test_pool_best_fit_and_coalesce)
{
	setup("pool", "initial_pool_size_mb:64");
	A(0, MB);
	A(1, 4 * MB);
	A(2, MB);
	A(3, 2 * MB);
	A(4, MB);
	ck_assert_uint_eq(addr[1], addr[0] + MB);
	F(1);
	F(3);
	ck_assert_uint_eq(A(5, 2 * MB), addr[3]); /* 2 MiB hole, not 4 */
	F(0);
	F(2);
	F(4);
	F(5);
	uint64_t largest, total;
	msim_policy_free_info(pol, &largest, &total);
	ck_assert_uint_eq(largest, 64 * MB);
	ck_assert_uint_eq(total, 64 * MB);
	A(6, 100 * MB); /* grows by max(100, 64) MiB */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 164 * MB);
	teardown();
}
END_TEST

START_TEST(test_pool_maximum)
{
	setup("pool", "initial_pool_size_mb:64,maximum_pool_size_mb:100");
	A(0, 50 * MB);
	ck_assert_int_eq(try_alloc(1, 50 * MB), MSIM_EDEVOOM); /* 36 left */
	A(1, 16 * MB); /* 14 MiB free: grows by max(16, 36 / 2) = 18 MiB */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 82 * MB);
	teardown();
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_pool_grows_by_its_size);
	tcase_add_test(tc, test_pool_best_fit_and_coalesce);
	tcase_add_test(tc, test_pool_maximum);
}

int
main(void)
{
	return run_suite("policy_pool", add);
}
