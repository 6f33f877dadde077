/* cupy: CuPy's MemoryPool: 512 B units, exact cudaMallocs, best fit per
 * stream arena, split and merge, free_all_blocks on a limit. */
#include <config.h>

#include "tests/policytest.h"

#define KB (UINT64_C(1) << 10)

/* The action of the i-th device event. */
static int
event_action(size_t i)
{
	size_t n;
	const msim_seg_event_t *ev = msim_device_events(dev, &n);
	ck_assert_uint_lt(i, n);
	return ev[i].action;
}

static msim_addr_t
A_on(uint32_t id, uint64_t size, msim_stream_t stream)
{
	msim_req_t r = {.kind = MSIM_REQ_ALLOC, .id = id, .size = size,
			.stream = stream};
	ck_assert_int_eq(msim_policy_alloc(pol, &r, &addr[id]), 0);
	return addr[id];
}

START_TEST(test_cupy_mallocs_the_rounded_size)
{
	setup("cupy", "");
	A(0, 1000);
	A(1, 1);
	A(2, 5000);
	A(3, 512);
	ck_assert_uint_eq(nevents(), 4);
	ck_assert_uint_eq(event_size(0), 1024);
	ck_assert_uint_eq(event_size(1), 512);
	ck_assert_uint_eq(event_size(2), 5120);
	ck_assert_uint_eq(event_size(3), 512);
	msim_stats_t st = S();
	ck_assert_int_eq(CUR(st, reserved_bytes), 1024 + 512 + 5120 + 512);
	ck_assert_int_eq(CUR(st, allocated_bytes), 1024 + 512 + 5120 + 512);
	ck_assert_int_eq(CUR(st, requested_bytes), 1000 + 1 + 5000 + 512);
	teardown();
}
END_TEST

START_TEST(test_cupy_split_best_fit_merge)
{
	setup("cupy", "");
	A(0, MB);
	A(1, 2 * MB);
	A(2, 768 * KB);
	F(0);
	F(2);
	/* best fit: the 768 KiB chunk, split; the front is handed out */
	ck_assert_uint_eq(A(3, 256 * KB), addr[2]);
	ck_assert_uint_eq(A(4, 512 * KB), addr[2] + 256 * KB);
	ck_assert_uint_eq(nevents(), 3);
	/* 1 MiB fits only the first chunk */
	ck_assert_uint_eq(A(5, 600 * KB), addr[0]);
	F(3);
	F(4);
	/* merged back whole: a 768 KiB request takes it unsplit */
	ck_assert_uint_eq(A(6, 768 * KB), addr[2]);
	ck_assert_uint_eq(nevents(), 3);
	uint64_t largest, total;
	F(6);
	msim_policy_free_info(pol, &largest, &total);
	ck_assert_uint_eq(largest, 768 * KB);
	ck_assert_uint_eq(total, 768 * KB + (MB - 600 * KB));
	teardown();
}
END_TEST

START_TEST(test_cupy_free_all_blocks_keeps_split_chunks)
{
	setup("cupy", "");
	A(0, MB);
	A(1, MB);
	F(1);
	A(2, 256 * KB); /* splits the second cudaMalloc */
	F(0);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
	/* the whole first chunk went back; the split one stays */
	ck_assert_uint_eq(nevents(), 3);
	ck_assert_int_eq(event_action(2), MSIM_SEG_FREE);
	ck_assert_uint_eq(event_size(2), MB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), MB);
	F(2);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
	ck_assert_uint_eq(nevents(), 4);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 0);
	teardown();
}
END_TEST

START_TEST(test_cupy_arena_per_stream)
{
	setup("cupy", "");
	A_on(0, MB, 7);
	F(0);
	/* stream 0's arena is empty: a new cudaMalloc */
	msim_addr_t a = A_on(1, MB, 0);
	ck_assert_uint_ne(a, addr[0]);
	ck_assert_uint_eq(nevents(), 2);
	/* stream 7 gets its chunk back */
	ck_assert_uint_eq(A_on(2, MB, 7), addr[0]);
	teardown();
}
END_TEST

START_TEST(test_cupy_limit_frees_cached_then_mallocs)
{
	setup("cupy", "limit:2097152");
	A(0, MB);
	F(0);
	A(1, 1536 * KB); /* 1 + 1.5 MiB > 2 MiB: free_all_blocks first */
	ck_assert_uint_eq(nevents(), 3);
	ck_assert_int_eq(event_action(1), MSIM_SEG_FREE);
	ck_assert_uint_eq(event_size(2), 1536 * KB);
	ck_assert_int_eq(CUR(S(), reserved_bytes), 1536 * KB);
	teardown();
}
END_TEST

START_TEST(test_cupy_limit_oom_after_freeing)
{
	setup("cupy", "limit:1048576");
	A(0, 512 * KB);
	A(1, 512 * KB);
	F(0);
	ck_assert_int_eq(try_alloc(2, 768 * KB), MSIM_EDEVOOM);
	/* CuPy gave the cached chunk back before it raised */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 512 * KB);
	ck_assert_int_eq(S().num_ooms, 1);
	A(3, 512 * KB);
	teardown();
}
END_TEST

START_TEST(test_cupy_device_full_frees_cached)
{
	setup_cap("cupy", "", 4 * MB);
	A(0, 2 * MB);
	F(0);
	A(1, 3 * MB); /* cudaMalloc fails, free_all_blocks, again */
	ck_assert_int_eq(CUR(S(), reserved_bytes), 3 * MB);
	ck_assert_int_eq(try_alloc(2, 2 * MB), MSIM_EDEVOOM);
	teardown();
}
END_TEST

/* Among free chunks of equal size CuPy takes the one whose _Chunk object
 * sits lowest (_Arena.index); objects reuse the block freed last. */
START_TEST(test_cupy_ties_follow_chunk_objects)
{
	setup("cupy", "");
	/* objects: chunk 0, pmem 1; chunk 2, pmem 3 */
	A(0, MB);
	A(1, MB);
	F(0);    /* frees pmem 1 */
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0); /* frees chunk 0 */
	A(2, 4 * MB); /* a new cudaMalloc: chunk 0, pmem 1 */
	A(3, MB);     /* the first cudaMalloc's place again: chunk 4, pmem 5 */
	ck_assert_uint_eq(addr[3], addr[0]);
	ck_assert_uint_lt(addr[3], addr[2]);
	F(3);    /* chunk 4 free, frees pmem 5 */
	F(2);    /* chunk 0 free, frees pmem 1 */
	A(4, 3 * MB); /* splits chunk 0: the rest gets object 1, pmem 5 */
	ck_assert_uint_eq(addr[4], addr[2]);
	/* 1 MiB free at addr[3] (object 4) and at addr[2] + 3 MiB (object
	 * 1): CuPy takes the higher address, the lower object */
	ck_assert_uint_eq(A(5, MB), addr[2] + 3 * MB);
	ck_assert_uint_eq(A(6, MB), addr[3]);
	ck_assert_uint_eq(nevents(), 5);
	teardown();
}
END_TEST

/* cupy on a device that places segments at recorded addresses
 * (--addresses trace) when hints is set, else as by default. */
static void
setup_hints(int hints)
{
	const msim_policy_ops_t *ops = msim_policy_find("cupy");
	char why[256];
	msim_device_config_t cfg = {.log_events = 1, .use_hints = hints};
	dev = msim_device_new(&cfg);
	ck_assert_ptr_nonnull(dev);
	ck_assert_msg(msim_policy_new(ops, dev, NULL, &pol, why,
				      sizeof(why)) == 0, "%s", why);
	memset(addr, 0, sizeof(addr));
}

/* An alloc with its recorded address rec. */
static msim_addr_t
A_rec(uint32_t id, uint64_t size, msim_addr_t rec)
{
	msim_req_t r = {.kind = MSIM_REQ_ALLOC, .id = id, .size = size,
			.addr = rec};
	ck_assert_int_eq(msim_policy_alloc(pol, &r, &addr[id]), 0);
	return addr[id];
}

/* The tie of test_cupy_ties_follow_chunk_objects: 1 MiB free at addr[3]
 * (object 4) and at addr[2] + 3 MiB (object 1), and 2 MiB free at addr[7]
 * (object 6), a cudaMalloc of its own. */
static void
tie(void)
{
	A(0, MB);
	A(1, MB);
	F(0);
	ck_assert_int_eq(msim_policy_empty_cache(pol), 0);
	A(2, 4 * MB);
	A(3, MB);
	A(7, 2 * MB);
	F(7);
	F(3);
	F(2);
	A(4, 3 * MB); /* the rest of chunk 0 gets object 1 */
	ck_assert_uint_eq(addr[4], addr[2]);
	ck_assert_uint_eq(nevents(), 6);
}

/* With recorded addresses the recorded one decides the tie: CuPy handed
 * out the front of the chunk it took (_Arena.get_chunk, _Chunk.split). */
START_TEST(test_cupy_recorded_address_decides_tie)
{
	setup_hints(1);
	tie();
	/* the objects' order would give addr[2] + 3 MiB first */
	ck_assert_uint_eq(A_rec(5, MB, addr[3]), addr[3]);
	ck_assert_uint_eq(A_rec(6, MB, addr[2] + 3 * MB), addr[2] + 3 * MB);
	ck_assert_uint_eq(nevents(), 6);
	teardown();
}
END_TEST

/* A recorded address that starts no candidate, here the larger free
 * chunk's, or one inside a candidate: the objects' order decides. */
START_TEST(test_cupy_recorded_address_not_a_candidate)
{
	setup_hints(1);
	tie();
	ck_assert_uint_eq(A_rec(5, MB, addr[7]), addr[2] + 3 * MB);
	F(5);
	ck_assert_uint_eq(A_rec(5, 512 * KB, addr[3] + 512 * KB),
			  addr[2] + 3 * MB);
	ck_assert_uint_eq(A_rec(6, MB, 0), addr[3]);
	ck_assert_uint_eq(nevents(), 6);
	teardown();
}
END_TEST

/* Model addresses (the default): a recorded address never decides. */
START_TEST(test_cupy_model_addresses_ignore_recorded)
{
	setup_hints(0);
	tie();
	ck_assert_uint_eq(A_rec(5, MB, addr[3]), addr[2] + 3 * MB);
	teardown();
}
END_TEST

/* A new cudaMalloc goes where the recording's segment_alloc row put it. */
START_TEST(test_cupy_segment_at_recorded_address)
{
	setup_hints(1);
	msim_addr_t at = UINT64_C(0x7f3a12000000);
	ck_assert_int_eq(msim_device_hint(dev, at), 0);
	ck_assert_int_eq(msim_device_hint(dev, at - 4 * MB), 0);
	ck_assert_uint_eq(A_rec(0, 3 * MB, at), at);
	ck_assert_uint_eq(A_rec(1, 1000, at - 4 * MB), at - 4 * MB);
	F(0);
	/* 3 MiB free at at: a 1 MiB request splits it, the front out */
	ck_assert_uint_eq(A_rec(2, MB, at), at);
	ck_assert_uint_eq(nevents(), 2);
	ck_assert_uint_eq(event_size(1), 1024);
	teardown();
}
END_TEST

static void
add(TCase *tc)
{
	tcase_add_test(tc, test_cupy_mallocs_the_rounded_size);
	tcase_add_test(tc, test_cupy_split_best_fit_merge);
	tcase_add_test(tc, test_cupy_free_all_blocks_keeps_split_chunks);
	tcase_add_test(tc, test_cupy_arena_per_stream);
	tcase_add_test(tc, test_cupy_limit_frees_cached_then_mallocs);
	tcase_add_test(tc, test_cupy_limit_oom_after_freeing);
	tcase_add_test(tc, test_cupy_device_full_frees_cached);
	tcase_add_test(tc, test_cupy_ties_follow_chunk_objects);
	tcase_add_test(tc, test_cupy_recorded_address_decides_tie);
	tcase_add_test(tc, test_cupy_recorded_address_not_a_candidate);
	tcase_add_test(tc, test_cupy_model_addresses_ignore_recorded);
	tcase_add_test(tc, test_cupy_segment_at_recorded_address);
}

int
main(void)
{
	return run_suite("policy_cupy", add);
}
