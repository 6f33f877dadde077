/* buddy: power-of-two blocks, lowest address first, buddies merge. */
#include <config.h>

#include "tests/policytest.h"

START_TEST(test_buddy_split_and_merge)
{
	setup("buddy", "");
	A(0, 1000); /* 1 KiB at the arena's start */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 256 * MB);
	ck_assert_uint_eq(A(1, 1000), addr[0] + 1024);
	ck_assert_uint_eq(A(2, 3000), addr[0] + 4096);
	ck_assert_uint_eq(A(3, 513), addr[0] + 2048);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, allocated_bytes), 3 * 1024 + 4096);
	F(0);
	F(1); /* buddies merge into 2 KiB at the start */
	ck_assert_uint_eq(A(4, 2048), addr[0]);
	F(2);
	F(3);
	F(4);
	uint64_t largest, total;
	msim_policy_free_info(pol, &largest, &total);
	ck_assert_uint_eq(largest, 256 * MB); /* all merged back */
	ck_assert_uint_eq(total, 256 * MB);
	teardown();
}
END_TEST

START_TEST(test_buddy_large_and_new_arenas)
{
	setup("buddy", "arena_size_mb:64");
	A(0, 40 * MB); /* 64 MiB block: the whole arena */
	A(1, 20 * MB); /* 32 MiB: a second arena */
	A(2, 20 * MB); /* its other half */
	A(3, 100 * MB); /* larger than an arena: its own 128 MiB */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 256 * MB);
	ck_assert_int_eq(CUR(st, allocated_bytes), 256 * MB);
	ck_assert_int_eq(CUR(st, requested_bytes), 180 * MB);
	F(3);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 128 * MB);
	teardown();
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_buddy_split_and_merge);
	tcase_add_test(tc, test_buddy_large_and_new_arenas);
}

int
main(void)
{
	return run_suite("policy_buddy", add);
}
