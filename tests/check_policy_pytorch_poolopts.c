/*
 * The pytorch policy's MemPool options and checkpointed pool states, on
 * hand-made sequences with exact figures (docs/pytorch-allocator.md §1.4):
 * use_on_oom (setUseOnOOM, try_mempool_fallback()), no_split (setNoSplit,
 * should_split()) and setCheckpointPoolState (a pool_restore row places
 * the blocks of the checkpointed segments at their addresses).
 */
#include <config.h>

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lab/job.h"
#include "tests/policytest.h"
#include "tests/testutil.h"

/* A private-pool request of kind on pool id with flags and size. */
static int
PF(int kind, uint64_t id, uint8_t flags, uint64_t size)
{
	msim_req_t r = {.kind = (uint8_t)kind, .addr = id, .flags = flags,
			.size = size};
	return msim_policy_private_pool(pol, &r);
}

static int
P(int kind, uint64_t id)
{
	return PF(kind, id, 0, 0);
}

/* An alloc recorded at address at (a restore places it there). */
static int
A_AT(uint32_t id, uint64_t size, msim_addr_t at)
{
	msim_req_t r = {.kind = MSIM_REQ_ALLOC, .id = id, .size = size,
			.addr = at};
	return msim_policy_alloc(pol, &r, &addr[id]);
}

/* A MemPool(use_on_oom=flag) holding a free 60 MiB block, the default
 * pool a free 30 MiB segment, then 50 MiB in the default pool under a cap
 * of 100 MiB: cudaMalloc would pass the cap. */
static void
oom_setup(uint8_t flags)
{
	setup_pt(100 * MB);
	ck_assert_int_eq(PF(MSIM_REQ_POOL_CREATE, 5, flags, 0), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 5), 0);
	A(0, 60 * MB);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 5), 0);
	F(0);
	A(1, 30 * MB);
	F(1);
}

/* Whether a 50 MiB default-pool malloc now would free cached memory
 * (msim_policy_would_release(), which decides hidden empty_cache calls). */
static bool
would_release_50(void)
{
	msim_req_t r = {.kind = MSIM_REQ_ALLOC, .id = 2, .size = 50 * MB};
	return msim_policy_would_release(pol, &r);
}

/* use_on_oom: the 50 MiB take the front of the pool's 60 MiB block before
 * anything is freed (the fallback comes right after the first
 * alloc_block); the default pool's segment stays and serves the next
 * default-pool request; the block goes back to the pool. */
START_TEST(test_use_on_oom_takes_pool_block)
{
	oom_setup(MSIM_REQF_USE_ON_OOM);
	ck_assert(!would_release_50());
	A(2, 50 * MB);
	ck_assert_uint_eq(addr[2], addr[0]);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, segment), 2);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(90 * MB));
	ck_assert_int_eq(CUR(st, allocated_bytes), (int64_t)(50 * MB));
	ck_assert_int_eq(CUR(st, inactive_split_bytes), (int64_t)(10 * MB));
	ck_assert_int_eq(st.num_device_free, 0);
	ck_assert_int_eq(st.num_alloc_retries, 0);
	ck_assert_int_eq(st.num_ooms, 0);
	A(3, 8 * MB); /* default pool: the cached 30 MiB segment, split */
	ck_assert_uint_eq(addr[3], addr[1]);
	F(2);
	/* Back in the pool, whole again: a private-pool request only. */
	ck_assert_int_eq(CUR(S(), inactive_split_bytes), (int64_t)(22 * MB));
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 5), 0);
	A(4, 60 * MB);
	ck_assert_uint_eq(addr[4], addr[0]);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 5), 0);
	teardown();
}
END_TEST

/* Without use_on_oom the same request frees the default pool's cached
 * segment (release_cached_blocks), still passes the cap, and fails. */
START_TEST(test_without_use_on_oom_ooms)
{
	oom_setup(0);
	ck_assert(would_release_50());
	ck_assert_int_eq(try_alloc(2, 50 * MB), MSIM_EDEVOOM);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, segment), 1);
	ck_assert_int_eq(CUR(st, reserved_bytes), (int64_t)(60 * MB));
	ck_assert_int_eq(st.num_device_free, 1);
	ck_assert_int_eq(st.num_alloc_retries, 1);
	ck_assert_int_eq(st.num_ooms, 1);
	teardown();
}
END_TEST

/* The fallback takes cached blocks only: with the pool's block in use,
 * out of memory (after release_cached_blocks freed the default pool's
 * segment); ~MemPool then frees the pool's segment, which makes room. */
START_TEST(test_use_on_oom_cached_blocks_only)
{
	oom_setup(MSIM_REQF_USE_ON_OOM);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 5), 0);
	A(0, 60 * MB);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 5), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 5), 0);
	ck_assert_int_eq(try_alloc(2, 50 * MB), MSIM_EDEVOOM);
	F(0);
	ck_assert_int_eq(PF(MSIM_REQ_POOL_RELEASE, 5, MSIM_REQF_EMPTY_POOL,
			    0), 0); /* ~MemPool: its 60 MiB segment goes */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 0);
	A(2, 50 * MB); /* room now: a segment of its own */
	ck_assert_int_eq(CUR(S(), reserved_bytes), (int64_t)(50 * MB));
	teardown();
}
END_TEST

/* no_split: each block takes its whole segment (20 MiB for 4 MiB, 2 MiB
 * for 1000 bytes) and a freed one is reused whole; the default pool still
 * splits. */
START_TEST(test_no_split_pool)
{
	setup_pt(0);
	ck_assert_int_eq(PF(MSIM_REQ_POOL_CREATE, 6, MSIM_REQF_NO_SPLIT, 0),
			 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 6), 0);
	A(0, 4 * MB);
	A(1, 4 * MB);
	A(2, 1000);
	A(3, 3000);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, segment), 4);
	ck_assert_int_eq(CUR(st, allocated_bytes), (int64_t)(44 * MB));
	ck_assert_int_eq(CUR(st, requested_bytes),
			 (int64_t)(8 * MB + 4000));
	ck_assert_int_eq(CUR(st, inactive_split), 0);
	F(0);
	A(4, 2 * MB); /* x's 20 MiB block, whole */
	ck_assert_uint_eq(addr[4], addr[0]);
	ck_assert_int_eq(CUR(S(), allocated_bytes), (int64_t)(44 * MB));
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 6), 0);
	A(5, 4 * MB); /* the default pool splits its 20 MiB segment */
	st = S();
	ck_assert_int_eq(CUR(st, allocated_bytes), (int64_t)(48 * MB));
	ck_assert_int_eq(CUR(st, inactive_split_bytes), (int64_t)(16 * MB));
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 6), 0);
	teardown();
}
END_TEST

/* A checkpoint of pool 7's one 20 MiB segment [a 4][b 4, free][c 4]
 * [8, free], the pool changed after it (a, c freed; d 6 MiB, e 2 MiB),
 * then setCheckpointPoolState: d and e freed, the four blocks placed at
 * their addresses, b and the rest freed again. */
START_TEST(test_restore_places_blocks)
{
	setup_pt(0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_CREATE, 7), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 7), 0);
	msim_addr_t base = A(0, 4 * MB);
	A(1, 4 * MB);
	A(2, 4 * MB);
	F(1);
	F(0);
	F(2);
	A(3, 6 * MB);
	A(4, 2 * MB);
	ck_assert_uint_eq(addr[4], base + 6 * MB);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 7), 0);
	ck_assert_int_eq(PF(MSIM_REQ_POOL_RESTORE, 7, 0, 4), 0);
	F(3);
	F(4);
	ck_assert_int_eq(A_AT(5, 4 * MB, base), 0);
	ck_assert_int_eq(A_AT(6, 4 * MB, base + 4 * MB), 0);
	ck_assert_int_eq(A_AT(7, 4 * MB, base + 8 * MB), 0);
	ck_assert_int_eq(A_AT(8, 8 * MB, base + 12 * MB), 0);
	ck_assert_uint_eq(addr[7], base + 8 * MB);
	ck_assert_uint_eq(addr[8], base + 12 * MB);
	F(6);
	F(8);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, segment), 1);
	ck_assert_int_eq(CUR(st, allocated_bytes), (int64_t)(8 * MB));
	ck_assert_int_eq(CUR(st, inactive_split), 2);
	ck_assert_int_eq(CUR(st, inactive_split_bytes), (int64_t)(12 * MB));
	/* The restore is over: allocations are served as usual again, here
	 * the pool's best fit, the 8 MiB block after c, whole. */
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 7), 0);
	ck_assert_int_eq(A_AT(9, 8 * MB, 0), 0);
	ck_assert_uint_eq(addr[9], base + 12 * MB);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 7), 0);
	ck_assert_int_eq(CUR(S(), segment), 1);
	teardown();
}
END_TEST

/* What a restore refuses: a pool never created or freeable already.  A
 * placed alloc that fits no free block there nor any whole free segment
 * (the recording's segments are not the simulated ones) is served as a
 * malloc in the pool: here a segment of its own. */
START_TEST(test_restore_refused)
{
	setup_pt(0);
	ck_assert_int_eq(PF(MSIM_REQ_POOL_RESTORE, 8, 0, 1), MSIM_EINVAL);
	ck_assert_int_eq(P(MSIM_REQ_POOL_CREATE, 8), 0);
	ck_assert_int_eq(P(MSIM_REQ_POOL_BEGIN, 8), 0);
	msim_addr_t base = A(0, 4 * MB);
	ck_assert_int_eq(P(MSIM_REQ_POOL_END, 8), 0);
	F(0);
	ck_assert_int_eq(PF(MSIM_REQ_POOL_RESTORE, 8, 0, 1), 0);
	ck_assert_int_eq(A_AT(1, 30 * MB, base), 0);
	ck_assert_uint_ne(addr[1], base);
	ck_assert_int_eq(CUR(S(), segment), 2);
	ck_assert_int_eq(CUR(S(), reserved_bytes), (int64_t)(50 * MB));
	F(1);
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 8), 0); /* begin's */
	ck_assert_int_eq(P(MSIM_REQ_POOL_RELEASE, 8), 0); /* create's */
	ck_assert_int_eq(PF(MSIM_REQ_POOL_RESTORE, 8, 0, 1), MSIM_EINVAL);
	teardown();
}
END_TEST

/* tests/data/pools/restore.csv: the rows of test_restore_places_blocks as
 * a trace (pool_create size 0, pool_restore size 4), and the same rows
 * without the pool_restore row: the placed allocs then go to the default
 * pool, which takes a segment of its own. */
START_TEST(test_trace_restore_rows)
{
	msim_job_spec_t s = {.trace = test_data("pools/restore.csv"),
			     .policy = "pytorch"};
	msim_job_t *j = job_ran(&s);
	const msim_job_result_t *r = msim_job_result(j);
	ck_assert_int_eq(r->st.segment[0].allocated, 1);
	ck_assert_int_eq(r->st.reserved_bytes[0].peak, (int64_t)(20 * MB));
	ck_assert_int_eq(r->st.allocated_bytes[0].current, (int64_t)(8 * MB));
	msim_job_destroy(j);
	s.trace = test_data("pools/restore_norow.csv");
	j = job_ran(&s);
	r = msim_job_result(j);
	ck_assert_int_eq(r->st.segment[0].allocated, 2);
	ck_assert_int_eq(r->st.reserved_bytes[0].peak, (int64_t)(40 * MB));
	msim_job_destroy(j);
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_use_on_oom_takes_pool_block);
	tcase_add_test(tc, test_without_use_on_oom_ooms);
	tcase_add_test(tc, test_use_on_oom_cached_blocks_only);
	tcase_add_test(tc, test_no_split_pool);
	tcase_add_test(tc, test_restore_places_blocks);
	tcase_add_test(tc, test_restore_refused);
	tcase_add_test(tc, test_trace_restore_rows);
}

int
main(void)
{
	return run_suite("policy_pytorch_poolopts", add);
}
