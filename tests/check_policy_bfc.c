/*
 * bfc: TensorFlow's rules with hand-computed figures: 256 B rounding,
 * region growth from 2 MiB (doubling, and doubling again after a region
 * that did not need it), the split rule (twice the request, or a rest of
 * 128 MiB), coalescing, and garbage collection of free regions.
 */
#include <config.h>

#include "tests/policytest.h"

START_TEST(test_bfc_growth_and_split_rule)
{
	setup("bfc", "");
	A(0, 1000); /* region 2 MiB (next 4), split: 2 MiB >= 2 x 1 KiB */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 2 * MB);
	ck_assert_int_eq(CUR(st, allocated_bytes), 1024);
	A(1, 3 * MB); /* region 4 MiB (next 8), not split: 4 < 6, 1 < 128 */
	A(2, 20 * MB); /* 8 -> 16 -> 32 MiB; doubled, so next stays 32 */
	A(3, MB);     /* takes the 2 MiB - 1 KiB rest whole */
	st = S();
	ck_assert_uint_eq(event_size(0), 2 * MB);
	ck_assert_uint_eq(event_size(1), 4 * MB);
	ck_assert_uint_eq(event_size(2), 32 * MB);
	ck_assert_int_eq(CUR(st, reserved_bytes), 38 * MB);
	ck_assert_int_eq(CUR(st, allocated_bytes), 38 * MB);
	ck_assert_int_eq(CUR(st, requested_bytes), 1000 + 24 * MB);
	ck_assert_uint_eq(addr[3], addr[0] + 1024);
	A(4, 10 * MB); /* 32 MiB region: curr was not increased -> 64 */
	ck_assert_uint_eq(event_size(3), 32 * MB);
	A(5, 40 * MB);
	ck_assert_uint_eq(event_size(4), 64 * MB);
	teardown();
}
END_TEST

START_TEST(test_bfc_coalesce)
{
	setup("bfc", "");
	A(0, 1000);
	A(3, MB);
	F(0);
	F(3);
	uint64_t largest, total;
	msim_policy_free_info(pol, &largest, &total);
	ck_assert_uint_eq(largest, 2 * MB);
	ck_assert_uint_eq(total, 2 * MB);
	ck_assert_uint_eq(A(4, 512 * 1024), addr[0]);
	teardown();
}
END_TEST

START_TEST(test_bfc_split_when_rest_is_128_mib)
{
	setup("bfc", "");
	A(0, 300 * MB); /* region 512 MiB: 512 < 600 but 212 >= 128: split */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 512 * MB);
	ck_assert_int_eq(CUR(st, allocated_bytes), 300 * MB);
	teardown();
	setup("bfc", "fragmentation_fraction:0.5,memory_limit_mb:1024");
	A(0, 300 * MB); /* rest 212 < 512: whole chunk */
	ck_assert_int_eq(CUR(S(), allocated_bytes), 512 * MB);
	teardown();
}
END_TEST

START_TEST(test_bfc_garbage_collection)
{
	setup("bfc", "memory_limit_mb:300");
	A(0, 100 * MB); /* region 128 MiB */
	F(0);
	A(1, 200 * MB); /* 172 MiB left: free the 128 MiB region, 256 MiB */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 256 * MB);
	ck_assert_int_eq(st.num_device_free, 1);
	ck_assert_uint_eq(event_size(2), 256 * MB);
	teardown();
	setup("bfc", "memory_limit_mb:300,garbage_collection:False");
	A(0, 100 * MB);
	F(0);
	ck_assert_int_eq(try_alloc(1, 200 * MB), MSIM_EDEVOOM);
	teardown();
}
END_TEST

START_TEST(test_bfc_without_growth)
{
	setup("bfc", "allow_growth:False,memory_limit_mb:1024");
	A(0, 1000);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 1024 * MB);
	ck_assert_int_eq(try_alloc(1, 1024 * MB), MSIM_EDEVOOM);
	teardown();
}
END_TEST

/* Two free 32 MiB regions: BFC takes the lower address (its bins are
 * ordered by size, then address).  In a JAX process the second region
 * lies above the first (docs/bfc.md §2), in a PyTorch one below it
 * (docs/pytorch-allocator.md §13), so the same request gets the other. */
static void
two_free_regions(const char *conf)
{
	setup("bfc", conf);
	A(0, 32 * MB); /* region 32 MiB (2 doubled four times), whole */
	A(1, 32 * MB); /* region 32 MiB (not doubled: it was), whole */
	ck_assert_uint_eq(event_size(0), 32 * MB);
	ck_assert_uint_eq(event_size(1), 32 * MB);
	F(0);
	F(1);
	A(2, 32 * MB);
}

START_TEST(test_bfc_placement_decides_ties)
{
	two_free_regions("placement:jax");
	ck_assert_uint_eq(addr[0], 0x302000000);
	ck_assert_uint_eq(addr[1], 0x304000000);
	ck_assert_uint_eq(addr[2], addr[0]);
	teardown();
	two_free_regions("");
	ck_assert_uint_eq(addr[0] - addr[1], 32 * MB);
	ck_assert_uint_eq(addr[2], addr[1]);
	teardown();
}
END_TEST

/* XLA's central gap (JAX's preallocated pool): a free chunk that fits is
 * taken before the region's untouched top, even when the top fits better;
 * a chunk freed just below the top joins it. */
static void
hole_or_top(const char *conf)
{
	setup("bfc", conf);
	A(0, 24 * MB); /* each splits the top: it is at least twice */
	A(1, 4 * MB);
	A(2, 16 * MB); /* 20 MiB untouched above */
	F(0);          /* a 24 MiB free chunk at the bottom */
	A(3, 12 * MB);
}

START_TEST(test_bfc_spatial_partitioning)
{
	hole_or_top("allow_growth:False,memory_limit_mb:64,"
		    "spatial_partitioning:True");
	ck_assert_uint_eq(addr[3], addr[0]); /* split: 24 >= 2 x 12 */
	ck_assert_int_eq(CUR(S(), allocated_bytes), 32 * MB);
	F(2);
	uint64_t largest, total;
	msim_policy_free_info(pol, &largest, &total);
	ck_assert_uint_eq(largest, 36 * MB); /* 16 + 20 at the top */
	ck_assert_uint_eq(total, 48 * MB);
	teardown();
	hole_or_top("allow_growth:False,memory_limit_mb:64");
	ck_assert_uint_eq(addr[3], addr[2] + 16 * MB); /* the 20 MiB, whole */
	ck_assert_int_eq(CUR(S(), allocated_bytes), 40 * MB);
	teardown();
}
END_TEST

START_TEST(test_bfc_placement_refused)
{
	const msim_policy_ops_t *ops = msim_policy_find("bfc");
	msim_params_t pv;
	ck_assert_int_eq(msim_params_init(&pv, ops->params), 0);
	ck_assert_int_ne(msim_params_parse(&pv, "placement:tensorflow"), 0);
	ck_assert_ptr_nonnull(strstr(pv.errmsg, "not pytorch or jax"));
	ck_assert_int_eq(msim_params_parse(&pv, "spatial_partitioning:True"),
			 0);
	msim_device_t *d = msim_device_new(NULL);
	msim_policy_t *p = NULL;
	char why[256] = "";
	ck_assert_int_eq(msim_policy_new(ops, d, &pv, &p, why, sizeof(why)),
			 MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "allow_growth:False"));
	msim_device_destroy(d);
	msim_params_clear(&pv);
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_bfc_growth_and_split_rule);
	tcase_add_test(tc, test_bfc_coalesce);
	tcase_add_test(tc, test_bfc_split_when_rest_is_128_mib);
	tcase_add_test(tc, test_bfc_garbage_collection);
	tcase_add_test(tc, test_bfc_without_growth);
	tcase_add_test(tc, test_bfc_placement_decides_ties);
	tcase_add_test(tc, test_bfc_spatial_partitioning);
	tcase_add_test(tc, test_bfc_placement_refused);
}

int
main(void)
{
	return run_suite("policy_bfc", add);
}
