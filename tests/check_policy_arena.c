/* arena: size-class superblocks over a best-fit global pool. */
#include <config.h>

#include "tests/policytest.h"

START_TEST(test_arena_classes_and_superblocks)
{
	setup("arena", "");
	A(0, 1000); /* class 1 KiB: superblock 0 of a 64 MiB segment */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 64 * MB);
	ck_assert_uint_eq(A(1, 1000), addr[0] + 1024);
	ck_assert_uint_eq(A(2, 3000), addr[0] + 2 * MB); /* class 4 KiB */
	ck_assert_uint_eq(A(3, 10 * MB), addr[0] + 4 * MB); /* global */
	F(0);
	ck_assert_uint_eq(A(5, 1000), addr[0]); /* first fit in its class */
	F(2); /* superblock empty: back to the global pool */
	ck_assert_uint_eq(A(4, 2 * MB), addr[0] + 2 * MB); /* best fit */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 64 * MB);
	ck_assert_int_eq(CUR(st, allocated_bytes), 2048 + 12 * MB);
	ck_assert_int_eq(st.num_device_alloc, 1);
	teardown();
}
END_TEST

START_TEST(test_arena_grows_by_grow_mb)
{
	setup("arena", "grow_mb:16");
	A(0, 10 * MB);
	A(1, 10 * MB); /* 6 MiB left: a new 16 MiB segment */
	A(2, 20 * MB); /* larger than grow_mb: its own 20 MiB */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 52 * MB);
	teardown();
}
END_TEST

START_TEST(test_arena_bad_settings)
{
	msim_device_t *d = msim_device_new(NULL);
	const msim_policy_ops_t *ops = msim_policy_find("arena");
	msim_params_t pv;
	msim_policy_t *p;
	char why[256];
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_int_eq(msim_params_parse(&pv, "max_small_kb:2048"), 0);
	ck_assert_int_eq(msim_policy_new(ops, d, &pv, &p, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "superblock"));
	msim_params_clear(&pv);
	msim_device_destroy(d);
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_arena_classes_and_superblocks);
	tcase_add_test(tc, test_arena_grows_by_grow_mb);
	tcase_add_test(tc, test_arena_bad_settings);
}

int
main(void)
{
	return run_suite("policy_arena", add);
}
