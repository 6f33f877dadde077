/*
 * cuda-async: the model's rules by hand (first fit, 2 MiB rounding of large
 * blocks, 32 MiB granules mapped once and kept, the release threshold,
 * empty_cache), the measured case of docs/pytorch-allocator.md §12
 * (1000 B + 30 MiB live reserve 32 MiB), and the fit to tests/data/async.tsv:
 * the reserved peaks of the real pool on an H200, with the error per
 * workload.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>

#include "sim/engine.h"
#include "tests/policytest.h"
#include "tests/testutil.h"
#include "traces/trace.h"

START_TEST(test_async_spec_case)
{
	setup("cuda-async", "");
	A(0, 1000);
	A(1, 30000000); /* rounded to 30 MiB at +2 MiB: still granule 0 */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, allocated_bytes), 30001000);
	ck_assert_int_eq(CUR(st, reserved_bytes), 32 * MB);
	ck_assert_uint_eq(addr[1], addr[0] + 2 * MB);
	F(0);
	F(1);
	st = S();
	ck_assert_int_eq(CUR(st, allocated_bytes), 0);
	ck_assert_int_eq(CUR(st, reserved_bytes), 32 * MB);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 0);
	teardown();
}
END_TEST

START_TEST(test_async_granules_are_remapped)
{
	setup("cuda-async", "");
	A(0, 1000);
	A(2, 4 * MB);  /* small: 512 B rounding, first fit at +1 KiB */
	ck_assert_uint_eq(addr[2], addr[0] + 1024);
	A(3, 30 * MB); /* large: at +6 MiB, reaches granule 1 */
	ck_assert_uint_eq(addr[3], addr[0] + 6 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 64 * MB);
	F(3);          /* granule 1 free, kept */
	A(4, 40 * MB); /* at +6 MiB again, granules 0 and 1 */
	ck_assert_uint_eq(addr[4], addr[0] + 6 * MB);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 64 * MB);
	ck_assert_int_eq(st.num_device_alloc, 2);
	F(0);
	F(2);
	A(5, 50 * MB); /* [0, 6) is too small: [46, 96) MiB, granule 2 */
	ck_assert_uint_eq(addr[5], addr[0] + 46 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 96 * MB);
	teardown();
}
END_TEST

START_TEST(test_async_release_threshold)
{
	setup("cuda-async", "release_threshold_mb:32");
	A(0, 1000);
	A(1, 60 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 64 * MB);
	F(1);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 32 * MB);
	ck_assert_int_eq(st.num_device_free, 1);
	teardown();
}
END_TEST

/* The model's peaks on the four replays of async.tsv, and the real ones. */
static const struct {
	const char *workload;
	int64_t model; /* what this model gives: a regression check */
} fit[] = {
	{"gpt2_fp32", 15938355200},
	{"gpt2_varlen", 13857980416},
	{"resnet50_amp", 3254779904},
	{"bert_infer_varlen", 1207959552},
};

START_TEST(test_async_fit_to_h200)
{
	FILE *fp = fopen(test_data("async.tsv"), "r");
	ck_assert_ptr_nonnull(fp);
	char line[1024], w[64], conf[64];
	long long rpeak = -1, apeak = -1, x;
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), fp)); /* header */
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%63s %63s %lld %lld", w, conf, &x, &apeak) ==
		    4 && !strcmp(w, fit[_i].workload)) {
			rpeak = x;
			break;
		}
	}
	fclose(fp);
	ck_assert_int_ge(rpeak, 0);

	char path[256], why[512];
	snprintf(path, sizeof(path), "traces/%s.csv", fit[_i].workload);
	msim_trace_t *t;
	ck_assert_int_eq(msim_trace_open(test_data(path), NULL, &t, why,
					 sizeof(why)), 0);
	msim_sim_config_t cfg = {
		.source = msim_trace_source(t),
		.policy = msim_policy_find("cuda-async"),
	};
	msim_sim_t *sim;
	ck_assert_int_eq(msim_sim_new(&cfg, &sim, why, sizeof(why)), 0);
	ck_assert_int_eq(msim_sim_run(sim), 0);
	msim_stats_t st;
	msim_sim_stats(sim, &st);
	int64_t peak = PEAK(st, reserved_bytes);
	printf("cuda-async %-18s reserved peak %lld, H200 %lld: %+lld MiB "
	       "(%+.2f%%)\n", fit[_i].workload, (long long)peak, rpeak,
	       (long long)(peak - rpeak) / (long long)MB,
	       100.0 * (double)(peak - rpeak) / (double)rpeak);
	/* The allocated peak is the exact sum of live requests, as the
	 * driver's UsedMemHigh. */
	ck_assert_int_eq(PEAK(st, allocated_bytes), apeak);
	ck_assert_int_eq(peak % (32 * MB), 0);
	ck_assert_int_eq(peak, fit[_i].model);
	/* Within two granules of the real pool. */
	ck_assert_int_le(llabs((long long)(peak - rpeak)), 64 * MB);
	msim_sim_destroy(sim);
	msim_trace_close(t);
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_async_spec_case);
	tcase_add_test(tc, test_async_granules_are_remapped);
	tcase_add_test(tc, test_async_release_threshold);
	tcase_add_loop_test(tc, test_async_fit_to_h200, 0,
			    sizeof(fit) / sizeof(fit[0]));
}

int
main(void)
{
	return run_suite("policy_cuda_async", add);
}
