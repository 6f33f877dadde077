/*
 * Several processes on one GPU (sim/gpu.h, lab/together.h), on hand-made
 * traces in tests/data/together/ and a GPU of 64 MiB.  cached.csv
 * allocates 40 MiB, frees it and allocates it again (PyTorch keeps the
 * segment cached); later.csv, recorded 1 s later, allocates 20 MiB then
 * 12 MiB.  Each fits alone (40 MiB and 32 MiB reserved); together, with
 * time relative to each trace's start, later's second request finds the
 * GPU full of cached's cached segment: its cudaMalloc fails, its own
 * release_cached_blocks has nothing to free, the retry fails, and it
 * raises OOM at its request 1.  grows.csv (40 MiB, then 12 MiB at
 * 100 us) with one.csv (20 MiB at 1 s): relative time puts one's 20 MiB
 * between grows's two requests, so grows hits the OOM at its request 1;
 * absolute time runs grows first, so one hits it at its request 0.
 */
#include <config.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lab/together.h"
#include "sim/device.h"
#include "sim/error.h"
#include "sim/gpu.h"
#include "tests/testutil.h"

#define MiB (UINT64_C(1024) * 1024)
#define GPU (64 * MiB)

static char path_a[4096], path_b[4096];

static void
paths(const char *a, const char *b)
{
	snprintf(path_a, sizeof(path_a), "%s", test_data(a));
	snprintf(path_b, sizeof(path_b), "%s", test_data(b));
}

/* Runs the two traces together; fails the test on an error. */
static msim_together_t *
together(const char *a, const char *b, bool absolute, uint64_t cap_a,
	 const char *policy_b)
{
	paths(a, b);
	msim_job_spec_t specs[2] = {
		{.trace = path_a, .policy = "pytorch", .cap = cap_a},
		{.trace = path_b, .policy = policy_b},
	};
	msim_together_t *t;
	msim_job_err_t err;
	size_t bad = 99;
	int rc = msim_together_open(specs, 2, GPU, 0, absolute, false, &t,
				    &bad, &err);
	ck_assert_msg(rc == 0, "open: %s", err.msg);
	rc = msim_together_run(t, &bad, &err);
	ck_assert_msg(rc == 0, "run: %s", err.msg);
	return t;
}

static const msim_job_result_t *
result(msim_together_t *t, size_t i)
{
	return msim_job_result(msim_together_job(t, i));
}

START_TEST(test_gpu_counts)
{
	msim_gpu_t *g = msim_gpu_new(100, 2);
	ck_assert_ptr_nonnull(g);
	ck_assert_ptr_null(msim_gpu_new(100, 0));
	msim_gpu_count(g, 0, 3, 60);
	msim_gpu_count(g, 1, 1, 30);
	msim_gpu_count(g, 0, 4, -60);
	msim_gpu_count(g, 1, 2, 50);
	msim_gpu_stats_t gs;
	msim_gpu_stats(g, &gs);
	ck_assert_uint_eq(gs.peak, 90);
	ck_assert_uint_eq(gs.peak_proc, 1);
	ck_assert_uint_eq(gs.peak_request, 1);
	ck_assert_uint_eq(gs.used, 80);
	ck_assert_uint_eq(msim_gpu_held_at_peak(g, 0), 60);
	ck_assert_uint_eq(msim_gpu_held_at_peak(g, 1), 30);
	ck_assert_uint_eq(msim_gpu_held(g, 1), 80);
	ck_assert(msim_gpu_fits(g, 20));
	ck_assert(!msim_gpu_fits(g, 21));
	ck_assert_int_eq(msim_gpu_last_full_request(g, 0), -1);
	msim_gpu_note_full(g, 0, 7, 21);
	ck_assert_uint_eq(msim_gpu_full_failures(g, 0), 1);
	ck_assert_int_eq(msim_gpu_last_full_request(g, 0), 7);
	msim_gpu_destroy(g);
}
END_TEST

/* Two devices over one GPU: each under its own cap, both under the GPU. */
START_TEST(test_devices_share)
{
	msim_gpu_t *g = msim_gpu_new(GPU, 2);
	msim_device_t *d0 = msim_device_new(&(msim_device_config_t){
		.capacity = GPU, .gpu = g, .process = 0});
	msim_device_t *d1 = msim_device_new(&(msim_device_config_t){
		.capacity = GPU, .gpu = g, .process = 1, .cap = 40 * MiB});
	msim_addr_t a0, a1, a2, a3;
	ck_assert_int_eq(msim_device_malloc(d0, 40 * MiB, MSIM_POOL_LARGE,
					    &a0), 0);
	ck_assert_int_eq(msim_device_malloc(d1, 20 * MiB, MSIM_POOL_LARGE,
					    &a1), 0);
	ck_assert_uint_eq(msim_device_avail(d1), 4 * MiB);
	ck_assert_uint_eq(msim_device_avail(d0), 4 * MiB);
	/* 12 MiB: under d1's cap (32 <= 40) but the GPU is full
	 * (60 + 12 > 64). */
	ck_assert_int_eq(msim_device_malloc(d1, 12 * MiB, MSIM_POOL_LARGE,
					    &a2), MSIM_EDEVOOM);
	ck_assert_uint_eq(msim_gpu_full_failures(g, 1), 1);
	msim_device_free(d0, a0, 40 * MiB, MSIM_POOL_LARGE);
	ck_assert_int_eq(msim_device_malloc(d1, 12 * MiB, MSIM_POOL_LARGE,
					    &a2), 0);
	/* 12 MiB more: the GPU has room (32 left), d1's cap refuses it. */
	ck_assert_int_eq(msim_device_malloc(d1, 12 * MiB, MSIM_POOL_LARGE,
					    &a3), MSIM_EDEVOOM);
	ck_assert_uint_eq(msim_gpu_full_failures(g, 1), 1);
	ck_assert_int_eq(msim_device_malloc(d1, 8 * MiB, MSIM_POOL_LARGE,
					    &a3), 0);
	ck_assert_uint_eq(msim_device_reserved(d1), 40 * MiB);
	ck_assert_uint_eq(msim_device_reserved(d0), 0);
	msim_gpu_stats_t gs;
	msim_gpu_stats(g, &gs);
	ck_assert_uint_eq(gs.used, 40 * MiB);
	ck_assert_uint_eq(gs.peak, 60 * MiB);
	ck_assert_uint_eq(msim_gpu_held(g, 1), 40 * MiB);
	msim_device_destroy(d0);
	msim_device_destroy(d1);
	msim_gpu_destroy(g);
}
END_TEST

/* Alone, each fits in 64 MiB. */
START_TEST(test_each_fits_alone)
{
	const char *names[] = {"together/cached.csv", "together/later.csv",
			       "together/grows.csv", "together/one.csv"};
	const uint64_t peaks[] = {40 * MiB, 32 * MiB, 52 * MiB, 20 * MiB};
	for (size_t i = 0; i < 4; i++) {
		msim_job_spec_t s = {.trace = test_data(names[i]),
				     .policy = "pytorch", .capacity = GPU};
		msim_job_t *j;
		msim_job_err_t err;
		ck_assert_msg(msim_job_open(&s, false, &j, &err) == 0, "%s",
			      err.msg);
		ck_assert_int_eq(msim_job_run(j, &err), 0);
		const msim_job_result_t *r = msim_job_result(j);
		ck_assert_int_eq(r->sum.oom_request, -1);
		ck_assert_int_eq(r->st.reserved_bytes[0].peak,
				 (int64_t)peaks[i]);
		msim_job_destroy(j);
	}
}
END_TEST

START_TEST(test_cached_segment_starves_other)
{
	msim_together_t *t = together("together/cached.csv",
				      "together/later.csv", false, 0,
				      "pytorch");
	const msim_gpu_t *g = msim_together_gpu(t);
	msim_gpu_stats_t gs;
	msim_gpu_stats(g, &gs);
	ck_assert_uint_eq(gs.peak, 60 * MiB);
	ck_assert_uint_eq(gs.peak_proc, 1);
	ck_assert_uint_eq(gs.peak_request, 0);
	ck_assert_uint_eq(msim_gpu_held_at_peak(g, 0), 40 * MiB);
	ck_assert_uint_eq(msim_gpu_held_at_peak(g, 1), 20 * MiB);
	const msim_job_result_t *a = result(t, 0), *b = result(t, 1);
	ck_assert_int_eq(a->sum.oom_request, -1);
	ck_assert_uint_eq(a->sum.requests, 4);
	ck_assert_ptr_null(msim_together_oom_cause(t, 0));
	ck_assert_int_eq(b->sum.oom_request, 1);
	ck_assert_str_eq(msim_together_oom_cause(t, 1), "gpu");
	ck_assert_int_eq(b->st.num_alloc_retries, 1);
	ck_assert_int_eq(b->st.num_ooms, 1);
	/* The first cudaMalloc and its retry after release_cached_blocks. */
	ck_assert_uint_eq(msim_gpu_full_failures(g, 1), 2);
	ck_assert_int_eq(msim_gpu_last_full_request(g, 1), 1);
	ck_assert_uint_eq(msim_gpu_full_failures(g, 0), 0);
	/* cached still holds its cached segment at the end. */
	ck_assert_int_eq(a->st.reserved_bytes[0].current, (int64_t)(40 * MiB));
	msim_together_destroy(t);
}
END_TEST

START_TEST(test_relative_or_absolute_time)
{
	msim_together_t *t = together("together/grows.csv",
				      "together/one.csv", false, 0,
				      "pytorch");
	ck_assert_int_eq(result(t, 0)->sum.oom_request, 1);
	ck_assert_int_eq(result(t, 1)->sum.oom_request, -1);
	ck_assert_str_eq(msim_together_oom_cause(t, 0), "gpu");
	msim_together_destroy(t);
	t = together("together/grows.csv", "together/one.csv", true, 0,
		     "pytorch");
	ck_assert_int_eq(result(t, 0)->sum.oom_request, -1);
	ck_assert_int_eq(result(t, 1)->sum.oom_request, 0);
	ck_assert_str_eq(msim_together_oom_cause(t, 1), "gpu");
	msim_gpu_stats_t gs;
	msim_gpu_stats(msim_together_gpu(t), &gs);
	ck_assert_uint_eq(gs.peak, 52 * MiB);
	ck_assert_uint_eq(gs.peak_proc, 0);
	ck_assert_uint_eq(gs.peak_request, 1);
	msim_together_destroy(t);
}
END_TEST

/* A process's own cap stops it first; the other then fits. */
START_TEST(test_own_cap)
{
	msim_together_t *t = together("together/cached.csv",
				      "together/later.csv", false, 32 * MiB,
				      "bfc");
	ck_assert_int_eq(result(t, 0)->sum.oom_request, 0);
	ck_assert_str_eq(msim_together_oom_cause(t, 0), "process");
	ck_assert_uint_eq(result(t, 0)->cap_bytes, 32 * MiB);
	ck_assert_int_eq(result(t, 1)->sum.oom_request, -1);
	ck_assert_str_eq(result(t, 0)->policy, "pytorch");
	ck_assert_str_eq(result(t, 1)->policy, "bfc");
	msim_together_destroy(t);
}
END_TEST

START_TEST(test_errors_name_the_process)
{
	paths("together/cached.csv", "together/later.csv");
	msim_job_spec_t specs[2] = {
		{.trace = path_a, .policy = "pytorch"},
		{.trace = path_b, .policy = "pytorch",
		 .conf = "max_split_size_mb:2"},
	};
	msim_together_t *t;
	msim_job_err_t err;
	size_t bad = 99;
	ck_assert_int_eq(msim_together_open(specs, 2, GPU, 0, false, false, &t,
					    &bad, &err), MSIM_EINVAL);
	ck_assert_ptr_null(t);
	ck_assert_uint_eq(bad, 1);
	ck_assert_int_eq(err.part, MSIM_JOB_EPARAMS);
}
END_TEST

/* CUDA contexts: each process's holds context bytes of the GPU outside
 * its allocator.  On 80 MiB, cached (40 MiB) and later (20 + 12 MiB) fit
 * together (72 MiB); with contexts of 4 MiB they share 72 MiB and still
 * fit, with 5 MiB they share 70 MiB and later's 12 MiB finds the GPU full
 * (its request 1); contexts of 40 MiB leave nothing and are refused. */
START_TEST(test_contexts)
{
	paths("together/cached.csv", "together/later.csv");
	msim_job_spec_t specs[2] = {
		{.trace = path_a, .policy = "pytorch"},
		{.trace = path_b, .policy = "pytorch"},
	};
	const struct { uint64_t context; int64_t oom; } cases[] = {
		{0, -1}, {4 * MiB, -1}, {5 * MiB, 1},
	};
	for (size_t i = 0; i < 3; i++) {
		msim_together_t *t;
		msim_job_err_t err;
		size_t bad = 99;
		int rc = msim_together_open(specs, 2, 80 * MiB,
					    cases[i].context, false, false,
					    &t, &bad, &err);
		ck_assert_msg(rc == 0, "open: %s", err.msg);
		ck_assert_int_eq(msim_together_run(t, &bad, &err), 0);
		ck_assert_uint_eq(msim_gpu_capacity(msim_together_gpu(t)),
				  80 * MiB - 2 * cases[i].context);
		ck_assert_int_eq(result(t, 0)->sum.oom_request, -1);
		ck_assert_int_eq(result(t, 1)->sum.oom_request, cases[i].oom);
		msim_together_destroy(t);
	}
	msim_together_t *t;
	msim_job_err_t err;
	size_t bad = 99;
	ck_assert_int_eq(msim_together_open(specs, 2, 80 * MiB, 40 * MiB,
					    false, false, &t, &bad, &err),
			 MSIM_EINVAL);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(err.msg, "--context-bytes"));
}
END_TEST

START_TEST(test_named_capacities)
{
	char why[512];
	uint64_t b = 0;
	ck_assert_int_eq(msim_gpu_capacity_parse("h200:1g.18gb", &b, why,
						 sizeof(why)), 0);
	ck_assert_uint_eq(b, UINT64_C(18000000000));
	ck_assert_int_eq(msim_gpu_capacity_parse("h100:3g.40gb", &b, why,
						 sizeof(why)), 0);
	ck_assert_uint_eq(b, UINT64_C(40000000000));
	ck_assert_int_eq(msim_gpu_capacity_parse("a100-40gb:1g.5gb", &b, why,
						 sizeof(why)), 0);
	ck_assert_uint_eq(b, UINT64_C(5000000000));
	ck_assert_int_eq(msim_gpu_capacity_parse("h200", &b, why,
						 sizeof(why)), 0);
	ck_assert_uint_eq(b, MSIM_H200_BYTES);
	ck_assert_int_eq(msim_gpu_capacity_parse("h200:1g.5gb", &b, why,
						 sizeof(why)), MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "1g.18gb 1g.35gb 2g.35gb"));
	ck_assert_int_eq(msim_gpu_capacity_parse("h200:", &b, why,
						 sizeof(why)), MSIM_EINVAL);
	ck_assert_int_eq(msim_gpu_capacity_parse("h300:1g.18gb", &b, why,
						 sizeof(why)), MSIM_EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "not a byte size"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("together");
	TCase *tc = tcase_create("together");
	tcase_add_test(tc, test_gpu_counts);
	tcase_add_test(tc, test_devices_share);
	tcase_add_test(tc, test_each_fits_alone);
	tcase_add_test(tc, test_cached_segment_starves_other);
	tcase_add_test(tc, test_relative_or_absolute_time);
	tcase_add_test(tc, test_own_cap);
	tcase_add_test(tc, test_errors_name_the_process);
	tcase_add_test(tc, test_contexts);
	tcase_add_test(tc, test_named_capacities);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
