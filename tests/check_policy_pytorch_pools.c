/*
 * The pytorch policy's private pools (CUDA graph captures and
 * torch.cuda.MemPool), on hand-made sequences with exact figures:
 * beginAllocateToPool sends a stream's allocations to the pool, a block
 * freed there stays there, the pool's segments survive empty_cache() until
 * releasePool brings its use count to 0, the OOM retry skips
 * release_cached_blocks() while a capture is underway, and the default
 * pool is untouched by all this.
 */
#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab/job.h"
#include "tests/policytest.h"
#include "tests/testutil.h"

/* A private-pool request of kind on pool id (stream 0). */
static int
P(int kind, uint64_t id)
{
	msim_req_t r = {.kind = (uint8_t)kind, .addr = id};
	return msim_policy_private_pool(pol, &r);
}

static void
EC(void)
{
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
}

/* Pytorch under a cap of cap bytes (0: none), as
 * set_per_process_memory_fraction(cap / total). */
static void
setup_pt(uint64_t cap)
{
	setup("pytorch", "");
	if (cap)
		ck_assert_int_eq(msim_device_set_fraction(
			dev, (double)cap / (double)MSIM_H200_BYTES), 0);
	msim_policy_destroy(pol);
	const msim_policy_ops_t *ops = msim_policy_find("pytorch");
	char why[128];
	ck_assert_int_eq(msim_policy_new(ops, dev, NULL, &pol, why,
					 sizeof(why)), 0);
}

START_TEST(test_graph_pool_lifetime)
{
	setup_pt(0);
	A(0, MB); /* default small pool: a 2 MiB segment */
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 7), 0);
	A(1, MB); /* the private pool: a segment of its own */
	ck_assert_int_eq(CUR(S(), segment), 2);
	ck_assert_uint_ne(addr[1], addr[0] + MB);
	F(1);
	A(2, MB); /* reuses the block freed during the capture */
	ck_assert_uint_eq(addr[2], addr[1]);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 7), 0);
	A(3, MB); /* the default pool again: the other half of 0's */
	ck_assert_uint_eq(addr[3], addr[0] + MB);
	ck_assert_int_eq(CUR(S(), segment), 2);
	F(2);
	F(3);
	F(0);
	EC(); /* the pool is in use: only the default segment goes */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, segment), 1);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(2 * MB));
	ck_assert_int_eq(st.num_device_free, 1);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 7), 0);
	ck_assert_int_eq(CUR(S(), segment), 1); /* freeable, not freed */
	EC();
	st = S();
	ck_assert_int_eq(CUR(st, segment), 0);
	ck_assert_int_eq(CUR(st, reserved_bytes), 0);
	ck_assert_int_eq(st.num_device_free, 2);
	ck_assert_int_eq(st.num_device_alloc, 2);
	/* The pool is gone: its id starts a new one. */
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 7), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 7), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 7), 0);
	teardown();
}
END_TEST

/* torch.cuda.MemPool with use_mem_pool: created (1), entered (2), left
 * (end, release: 1), deleted (release: 0). */
START_TEST(test_mempool_use_count)
{
	setup_pt(0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_CREATE, 5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 5), 0);
	A(0, 4 * MB); /* large: a 20 MiB segment in the pool */
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 5), 0);
	A(1, 4 * MB); /* default: a 20 MiB segment of its own */
	ck_assert_int_eq(CUR(S(), segment), 2);
	F(0);
	F(1);
	EC();
	ck_assert_int_eq(CUR(S(), segment), 1);
	ck_assert_int_eq(CUR(S(), reserved_bytes), (int64_t)(20 * MB));
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 5), 0);
	EC();
	ck_assert_int_eq(CUR(S(), segment), 0);
	teardown();
}
END_TEST

/* Under a 24 MiB cap, 12 MiB cached in the default pool: a 14 MiB
 * allocation during a capture cannot have it (no release_cached_blocks
 * while capturing) and raises OOM; after the capture the same request
 * frees the cached segment and retries. */
START_TEST(test_capture_skips_full_release)
{
	setup_pt(24 * MB);
	A(0, 12 * MB);
	F(0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 1), 0);
	ck_assert_int_eq(try_alloc(1, 14 * MB), MSIM_EDEVOOM);
	msim_stats_t st = S();
	ck_assert_int_eq(st.num_ooms, 1);
	ck_assert_int_eq(st.num_alloc_retries, 0);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(12 * MB));
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 1), 0);
	A(2, 14 * MB);
	st = S();
	ck_assert_int_eq(st.num_ooms, 1);
	ck_assert_int_eq(st.num_alloc_retries, 1);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(14 * MB));
	ck_assert_int_eq(st.num_device_free, 1);
	teardown();
}
END_TEST

/* Expandable segments: a private pool has reservations of its own; its
 * pages are unmapped and the reservation released once it is freeable. */
START_TEST(test_expandable_private_pool)
{
	setup("pytorch", "expandable_segments:True");
	A(0, 4 * MB); /* default: one 20 MiB page */
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 4), 0);
	A(1, 4 * MB); /* the pool's own reservation and page */
	ck_assert_uint_lt(addr[0] + 20 * MB, addr[1] + 1);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 4), 0);
	ck_assert_int_eq(CUR(S(), reserved_bytes), (int64_t)(40 * MB));
	F(1);
	EC();
	ck_assert_int_eq(CUR(S(), reserved_bytes), (int64_t)(40 * MB));
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 4), 0);
	EC();
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(20 * MB));
	ck_assert_int_eq(st.num_device_alloc, 2);
	ck_assert_int_eq(st.num_device_free, 1);
	/* The pool is gone; its id starts a new one. */
	ck_assert_int_eq(P(MSIM_REQ_POOL_CREATE, 4), 0);
	F(0);
	teardown();
}
END_TEST

START_TEST(test_pool_requests_refused)
{
	setup_pt(0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 2), MSIM_EINVAL);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 2), MSIM_EINVAL);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 2), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 2), MSIM_EINVAL);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 2), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 2), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 2), MSIM_EINVAL);
	/* Freeable and not yet emptied: it cannot be shared again
	 * (create_or_incref_pool asserts use_count > 0). */
	ck_assert_int_eq(P(MSIM_REQ_POOL_CREATE, 2), MSIM_EINVAL);
	EC();
	ck_assert_int_eq(P(MSIM_REQ_POOL_CREATE, 2), 0);
	teardown();
}
END_TEST

/* Other policies have no private pools: the requests are no-ops. */
START_TEST(test_other_policies_ignore_pools)
{
	setup("bfc", "");
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 9), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 9), 0);
	teardown();
}
END_TEST

/* tests/data/pools/capture.csv: the first test's steps up to the capture
 * end and frees, as trace rows with a `pool` column. */
START_TEST(test_trace_pool_rows)
{
	msim_job_spec_t s = {.trace = test_data("pools/capture.csv"),
			     .policy = "pytorch"};
	msim_job_t *j;
	msim_job_err_t err;
	ck_assert_msg(msim_job_open(&s, false, &j, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(msim_job_run(j, &err), 0);
	const msim_job_result_t *r = msim_job_result(j);
	ck_assert_int_eq(r->st.segment[0].allocated, 2);
	ck_assert_int_eq(r->st.reserved_bytes[0].peak, (int64_t)(4 * MB));
	ck_assert_uint_eq(r->sum.requests, 8);
	msim_job_destroy(j);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("policy_pytorch_pools");
	TCase *tc = tcase_create("pools");
	tcase_add_test(tc, test_graph_pool_lifetime);
	tcase_add_test(tc, test_mempool_use_count);
	tcase_add_test(tc, test_capture_skips_full_release);
	tcase_add_test(tc, test_expandable_private_pool);
	tcase_add_test(tc, test_pool_requests_refused);
	tcase_add_test(tc, test_other_policies_ignore_pools);
	tcase_add_test(tc, test_trace_pool_rows);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
