/*
 * The pytorch policy's private pools (CUDA graph captures and
 * torch.cuda.MemPool), on hand-made sequences with exact figures:
 * beginAllocateToPool sends a stream's allocations to the pool, a block
 * freed there stays there, the pool's segments survive empty_cache() until
 * releasePool brings its use count to 0, the OOM retry skips
 * release_cached_blocks() while a capture is underway, and the default
 * pool is untouched by all this; graph_capture_record_stream_reuse (a block
 * freed with record_stream uses during a capture) and pools with an
 * allocator of their own (MemPool(allocator)).
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

/* pool_create of a pool with an allocator of its own. */
static int
P_OWN(uint64_t id)
{
	msim_req_t r = {.kind = MSIM_REQ_POOL_CREATE, .addr = id,
			.flags = MSIM_REQF_OWN_ALLOC};
	return msim_policy_private_pool(pol, &r);
}

/* ~MemPool's pool_release, which empties the pool's cache after it. */
static int
P_DEL(uint64_t id)
{
	msim_req_t r = {.kind = MSIM_REQ_POOL_RELEASE, .addr = id,
			.flags = MSIM_REQF_EMPTY_POOL};
	return msim_policy_private_pool(pol, &r);
}

/* The program frees id (free_requested): record_stream uses pending. */
static void
FR(uint32_t id)
{
	msim_req_t r = {.kind = MSIM_REQ_FREE_REQUESTED, .id = id};
	ck_assert_int_eq(msim_policy_free_requested(pol, &r), 0);
}

static void
EC(void)
{
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
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
	msim_job_t *j = job_ran(&s);
	const msim_job_result_t *r = msim_job_result(j);
	ck_assert_int_eq(r->st.segment[0].allocated, 2);
	ck_assert_int_eq(r->st.reserved_bytes[0].peak, (int64_t)(4 * MB));
	ck_assert_uint_eq(r->sum.requests, 8);
	msim_job_destroy(j);
}
END_TEST


/* graph_capture_record_stream_reuse off (the default): a 12 MiB block used
 * on another stream and freed during the capture is deferred (its
 * free_completed does not follow its free_requested at once); when that
 * row comes while the capture is still underway it changes nothing, so
 * the next 12 MiB takes a segment of its own, and the block goes back to
 * the pool at the first malloc after the capture (process_events()). */
START_TEST(test_capture_defers_record_stream_free)
{
	setup_pt(0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 3), 0);
	A(0, 12 * MB);
	FR(0);
	A(1, 12 * MB);
	F(0); /* deferred_blocks: still pending */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, active_bytes), (int64_t)(24 * MB));
	ck_assert_int_eq(CUR(st, allocated_bytes), (int64_t)(12 * MB));
	A(2, 12 * MB);
	ck_assert_uint_ne(addr[2], addr[0]);
	st = S();
	ck_assert_int_eq(CUR(st, segment), 3);
	ck_assert_int_eq(CUR(st, active_bytes), (int64_t)(36 * MB));
	EC(); /* during the capture: the deferred block stays */
	ck_assert_int_eq(CUR(S(), active_bytes), (int64_t)(36 * MB));
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 3), 0);
	ck_assert_int_eq(CUR(S(), active_bytes), (int64_t)(36 * MB));
	A(3, MB); /* the default pool; first the deferred free */
	st = S();
	ck_assert_int_eq(CUR(st, active_bytes), (int64_t)(25 * MB));
	ck_assert_int_eq(CUR(st, requested_bytes), (int64_t)(25 * MB));
	ck_assert_int_eq(CUR(st, segment), 4);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(38 * MB));
	/* Block 0 is free in the pool: releasing the pool frees all three. */
	F(1);
	F(2);
	F(3);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 3), 0);
	EC();
	st = S();
	ck_assert_int_eq(CUR(st, segment), 0);
	ck_assert_int_eq(st.num_device_free, 4);
	teardown();
}
END_TEST

/* The same with graph_capture_record_stream_reuse:True: the trace's
 * free_completed during the capture (free_safe_blocks_in_capture() found
 * the block's free markers behind the stream's terminals) returns the
 * block at once, and the next 12 MiB reuses it. */
START_TEST(test_capture_reuses_record_stream_free)
{
	setup("pytorch", "graph_capture_record_stream_reuse:True");
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 3), 0);
	A(0, 12 * MB);
	FR(0);
	A(1, 12 * MB);
	ck_assert_int_eq(CUR(S(), active_bytes), (int64_t)(24 * MB));
	F(0);
	ck_assert_int_eq(CUR(S(), active_bytes), (int64_t)(12 * MB));
	A(2, 12 * MB);
	ck_assert_uint_eq(addr[2], addr[0]);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, segment), 2);
	ck_assert_int_eq(PEAK(st, reserved_bytes), (int64_t)(24 * MB));
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 3), 0);
	F(1);
	F(2);
	teardown();
}
END_TEST

/* A plain free during a capture (free_block() within free(): its
 * free_completed row follows at once) is not deferred, whatever the
 * setting: the next 12 MiB reuses the block. */
START_TEST(test_capture_plain_free)
{
	setup_pt(0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 3), 0);
	A(0, 12 * MB);
	FR(0);
	F(0);
	ck_assert_int_eq(CUR(S(), active_bytes), 0);
	ck_assert_uint_eq(A(1, 12 * MB), addr[0]);
	ck_assert_int_eq(CUR(S(), segment), 1);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 3), 0);
	F(1);
	teardown();
}
END_TEST

/* Off again: a deferred block freed by the program after the capture
 * ended is not held; one held when the capture ends goes back with the
 * next release_cached_blocks() (empty_cache), as
 * synchronize_and_free_events() does. */
START_TEST(test_deferred_free_after_capture)
{
	setup_pt(0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 3), 0);
	A(0, 12 * MB);
	A(1, 12 * MB);
	FR(0);
	FR(1);
	F(0); /* held */
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 3), 0);
	F(1); /* after the capture: back at once */
	ck_assert_int_eq(CUR(S(), active_bytes), (int64_t)(12 * MB));
	EC(); /* 0 goes back; the pool is in use, so both segments stay */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, active_bytes), 0);
	ck_assert_int_eq(CUR(st, segment), 2);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 3), 0);
	EC();
	ck_assert_int_eq(CUR(S(), segment), 0);
	teardown();
}
END_TEST

/* A MemPool with its own allocator under expandable_segments:True: its
 * segments are whole allocations from the allocator (counted in segment,
 * reserved_bytes and num_device_alloc), placed apart from the driver's
 * range, never expandable, so split by the large-pool rule: 15 MiB in a
 * free 16 MiB piece takes it whole (1 MiB is not more than 1 MiB).  The
 * default pool keeps its expandable segment. */
START_TEST(test_own_allocator_pool)
{
	setup("pytorch", "expandable_segments:True");
	ck_assert_int_eq(P_OWN(5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 5), 0);
	A(0, 4 * MB);
	ck_assert_uint_eq(addr[0], UINT64_C(0x700000000000));
	A(1, 15 * MB); /* takes the whole 16 MiB rest */
	ck_assert_uint_eq(addr[1], addr[0] + 4 * MB);
	A(2, 25 * MB); /* a 26 MiB segment, whole, after the first */
	ck_assert_uint_eq(addr[2], UINT64_C(0x700000000000) + 20 * MB);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, segment), 2);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(46 * MB));
	ck_assert_int_eq(CUR(st, allocated_bytes), (int64_t)(46 * MB));
	ck_assert_int_eq(CUR(st, inactive_split), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 5), 0); /* use_mem_pool's exit */
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 5), 0);
	A(3, 4 * MB); /* default pool: a 20 MiB page, no segment counted */
	ck_assert_uint_lt(addr[3], UINT64_C(0x700000000000));
	st = S();
	ck_assert_int_eq(CUR(st, segment), 2);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(66 * MB));
	ck_assert_int_eq(st.num_device_alloc, 3);
	F(0);
	F(1);
	F(2);
	EC(); /* in use: the pool keeps its segments */
	ck_assert_int_eq(CUR(S(), segment), 2);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 5), 0); /* ~MemPool */
	EC(); /* deleted: both go back to the allocator */
	st = S();
	ck_assert_int_eq(CUR(st, segment), 0);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(20 * MB));
	ck_assert_int_eq(st.num_device_free, 2);
	/* A new pool with an allocator starts at the range's base again. */
	ck_assert_int_eq(P_OWN(6), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 6), 0);
	ck_assert_uint_eq(A(4, 30 * MB), UINT64_C(0x700000000000));
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 6), 0);
	F(4);
	F(3);
	/* An allocator is for a new pool only (create_or_incref_pool). */
	ck_assert_int_eq(P_OWN(6), MSIM_EINVAL);
	teardown();
}
END_TEST

/* The allocator's segments count against the cap (alloc_block checks
 * total_allocated_memory before allocPrimitive()): under 100 MiB, 60 MiB
 * in such a pool leave no room for 50 MiB in the default pool. */
START_TEST(test_own_allocator_counts_against_cap)
{
	setup_pt(100 * MB);
	ck_assert_int_eq(P_OWN(2), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 2), 0);
	A(0, 60 * MB);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 2), 0);
	ck_assert_int_eq(try_alloc(1, 50 * MB), MSIM_EDEVOOM);
	msim_stats_t st = S();
	ck_assert_int_eq(st.num_ooms, 1);
	ck_assert_int_eq(st.num_alloc_retries, 1);
	A(2, 40 * MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), (int64_t)(100 * MB));
	F(0);
	F(2);
	teardown();
}
END_TEST

/* tests/data/pools/ownalloc.csv: pool_create's size 1 marks the pool's
 * own allocator in a trace; 8 (no such flag) is refused, naming the line. */
START_TEST(test_trace_own_allocator_rows)
{
	msim_job_spec_t s = {.trace = test_data("pools/ownalloc.csv"),
			     .policy = "pytorch",
			     .conf = "expandable_segments:True"};
	msim_job_t *j = job_ran(&s);
	const msim_job_result_t *r = msim_job_result(j);
	/* the pool's 20 MiB segment; the default pool maps pages only */
	ck_assert_int_eq(r->st.segment[0].allocated, 1);
	ck_assert_int_eq(r->st.reserved_bytes[0].peak, (int64_t)(40 * MB));
	msim_job_destroy(j);
	s.trace = test_data("pools/ownalloc_bad.csv");
	msim_job_err_t err;
	int rc = msim_job_open(&s, false, &j, &err);
	if (rc == 0) {
		rc = msim_job_run(j, &err);
		msim_job_destroy(j);
	}
	ck_assert_int_ne(rc, 0);
	ck_assert_msg(strstr(err.msg, ":3:") &&
		      strstr(err.msg, "pool_create size 8"), "%s", err.msg);
}
END_TEST

/* ~MemPool: releasePool, then emptyCache(pool), which frees that pool's
 * cached segments once it is freeable (one num_sync_all_streams) and
 * leaves the default pool's free 12 MiB segment alone; while another use
 * holds the pool it does nothing at all. */
START_TEST(test_mempool_death_empties_its_cache)
{
	setup_pt(0);
	A(0, 12 * MB);
	ck_assert_int_eq(P(MSIM_REQ_POOL_CREATE, 5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 5), 0);
	A(1, 30 * MB);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 5), 0); /* a second user */
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 5), 0);
	F(0);
	F(1);
	ck_assert_int_eq(P_DEL(5), 0); /* use count 1 left: nothing */
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, segment), 2);
	ck_assert_int_eq(st.num_sync_all_streams, 0);
	ck_assert_int_eq(P_DEL(5), 0); /* the last: its segment goes */
	st = S();
	ck_assert_int_eq(CUR(st, segment), 1);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(12 * MB));
	ck_assert_int_eq(st.num_sync_all_streams, 1);
	ck_assert_int_eq(st.num_device_free, 1);
	ck_assert_uint_eq(A(2, 12 * MB), addr[0]);
	/* The pool is gone: its id starts a new one. */
	ck_assert_int_eq(P(MSIM_REQ_POOL_CREATE, 5), 0);
	F(2);
	teardown();
}
END_TEST

/* tests/data/pools/mempool_del.csv, the same as a recording: the
 * segment_free row after ~MemPool's pool_release (size 1) is its
 * emptyCache(pool)'s, not an empty_cache() that would free the default
 * pool's free 12 MiB segment too; the next 12 MiB takes that one. */
START_TEST(test_trace_mempool_death)
{
	msim_job_spec_t s = {.trace = test_data("pools/mempool_del.csv"),
			     .policy = "pytorch", .recording = true};
	msim_job_t *j = job_ran(&s);
	const msim_job_result_t *r = msim_job_result(j);
	ck_assert_int_eq(r->st.segment[0].allocated, 2);
	ck_assert_int_eq(r->st.segment[0].freed, 1);
	ck_assert_int_eq(r->st.num_sync_all_streams, 1);
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
	tcase_add_test(tc, test_capture_defers_record_stream_free);
	tcase_add_test(tc, test_capture_reuses_record_stream_free);
	tcase_add_test(tc, test_capture_plain_free);
	tcase_add_test(tc, test_deferred_free_after_capture);
	tcase_add_test(tc, test_own_allocator_pool);
	tcase_add_test(tc, test_own_allocator_counts_against_cap);
	tcase_add_test(tc, test_trace_own_allocator_rows);
	tcase_add_test(tc, test_mempool_death_empties_its_cache);
	tcase_add_test(tc, test_trace_mempool_death);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
