/* binning: power-of-two bins of 128-block chunks; large go upstream. */
#include <config.h>

#include "tests/policytest.h"

START_TEST(test_binning_bins_and_chunks)
{
	setup("binning", "");
	A(0, 1000); /* bin 1 KiB: a chunk of 128 KiB */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 128 * 1024);
	ck_assert_uint_eq(A(1, 600), addr[0] + 1024);
	F(0);
	ck_assert_uint_eq(A(2, 700), addr[0]); /* LIFO */
	A(3, 100); /* bin 512 B (the smallest): 64 KiB */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 192 * 1024);
	ck_assert_int_eq(CUR(st, allocated_bytes), 2048 + 512);
	A(4, 5 * MB); /* above 4 MiB: its own 6 MiB cudaMalloc */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 192 * 1024 + 6 * MB);
	F(4);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 192 * 1024);
	A(5, 4 * MB); /* bin 4 MiB: 512 MiB chunk */
	st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 192 * 1024 + 512 * MB);
	ck_assert_int_eq(st.num_device_alloc, 4);
	ck_assert_int_eq(st.num_device_free, 1);
	teardown();
}
END_TEST

START_TEST(test_binning_settings)
{
	setup("binning", "min_size_exponent:20,max_size_exponent:21,"
	      "blocks_per_chunk:2");
	A(0, 10);      /* bin 1 MiB: 2 MiB chunk */
	A(1, 3 * MB);  /* upstream: 4 MiB */
	A(2, 1536 * 1024); /* bin 2 MiB: 4 MiB chunk */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 10 * MB);
	uint64_t largest, total;
	msim_policy_free_info(pol, &largest, &total);
	ck_assert_uint_eq(largest, 2 * MB);
	ck_assert_uint_eq(total, MB + 2 * MB + MB); /* bins + tail */
	teardown();
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_binning_bins_and_chunks);
	tcase_add_test(tc, test_binning_settings);
}

int
main(void)
{
	return run_suite("policy_binning", add);
}
