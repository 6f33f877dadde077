/*
 * The minimal path of `memsim bench` (lab/minreplay.h): a hand-made
 * scenario with exact figures, then the same figures (current and peak)
 * as the pytorch policy through the engine on every single-stream test
 * trace, and a second stream refused as not comparable.
 */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab/bench.h"
#include "lab/minreplay.h"
#include "sim/error.h"
#include "testutil.h"

#define MiB (INT64_C(1024) * 1024)

static msim_req_t
rq(int kind, uint32_t id, uint64_t size)
{
	return (msim_req_t){.kind = (uint8_t)kind, .id = id, .size = size};
}

/*
 * 1000 B rounds to 1024 (round_size) in a new 2 MiB small segment, split
 * (remainder >= 512); 3 MiB takes a 20 MiB large segment (below 10 MiB),
 * split (remainder > 1 MiB); 12 MiB + 1 (12 MiB + 512 rounded) fits the
 * 17 MiB remainder (best fit) and splits it again (5 MiB - 512 left).
 * Freeing the first merges it back into a whole segment.
 */
START_TEST(test_exact)
{
	msim_minreplay_t *m;
	ck_assert_int_eq(msim_minreplay_new(&m), 0);
	msim_req_t v[] = {
		rq(MSIM_REQ_ALLOC, 0, 1000),
		rq(MSIM_REQ_ALLOC, 1, 3 * MiB),
		rq(MSIM_REQ_ALLOC, 2, 12 * MiB + 1),
		rq(MSIM_REQ_FREE_REQUESTED, 0, 0),
		rq(MSIM_REQ_FREE, 0, 0),
	};
	size_t at;
	ck_assert_int_eq(msim_minreplay_apply(m, v, 5, &at), 0);
	ck_assert_uint_eq(at, 5);
	msim_minreplay_stats_t st;
	msim_minreplay_stats(m, &st);
	int64_t b2 = 12 * MiB + 512;
	ck_assert_int_eq(st.requests, 4);
	ck_assert_int_eq(st.allocated.peak, 1024 + 3 * MiB + b2);
	ck_assert_int_eq(st.allocated.cur, 3 * MiB + b2);
	ck_assert_int_eq(st.requested.peak, 1000 + 3 * MiB + 12 * MiB + 1);
	ck_assert_int_eq(st.reserved.peak, 2 * MiB + 20 * MiB);
	ck_assert_int_eq(st.segment.cur, 2);
	ck_assert_int_eq(st.inactive_split.peak, 2);
	ck_assert_int_eq(st.inactive_split.cur, 1);
	ck_assert_int_eq(st.inactive_split_bytes.peak,
			 (2 * MiB - 1024) + 17 * MiB);
	ck_assert_int_eq(st.inactive_split_bytes.cur, 17 * MiB - b2);
	/* A free of no live block. */
	msim_req_t bad = rq(MSIM_REQ_FREE, 0, 0);
	ck_assert_int_eq(msim_minreplay_apply(m, &bad, 1, &at),
			 MSIM_ENOTFOUND);
	ck_assert_uint_eq(at, 0);
	/* A second stream is not modelled. */
	msim_req_t s2 = rq(MSIM_REQ_ALLOC, 3, 512);
	s2.stream = 7;
	ck_assert_int_eq(msim_minreplay_apply(m, &s2, 1, &at), MSIM_ENOTSUP);
	msim_minreplay_destroy(m);
}
END_TEST

static const char *const traces[] = {
	"traces/gpt2_fp32.csv", "traces/gpt2_varlen.csv",
	"traces/bert_infer_varlen.csv", "traces/resnet50_amp.csv",
};

START_TEST(test_same_as_pytorch)
{
	char why[1024];
	msim_bench_same_t r;
	int rc = msim_bench_same(test_data(traces[_i]), &r, why, sizeof(why));
	ck_assert_msg(rc == 0, "%s", why);
	ck_assert_msg(r.same, "%s: allocated peak %lld vs %lld, reserved "
		      "peak %lld vs %lld", traces[_i],
		      (long long)r.minimal.allocated.peak,
		      (long long)r.memsim.allocated_bytes[0].peak,
		      (long long)r.minimal.reserved.peak,
		      (long long)r.memsim.reserved_bytes[0].peak);
	ck_assert_int_gt(r.minimal.reserved.peak, 0);
	ck_assert_int_gt(r.minimal.inactive_split_bytes.peak, 0);
	/* Streamed from the file, the same figures. */
	uint64_t n;
	double cpu;
	msim_minreplay_stats_t st;
	rc = msim_bench_minimal_stream(test_data(traces[_i]), &n, &cpu, &st,
				       why, sizeof(why));
	ck_assert_msg(rc == 0, "%s", why);
	ck_assert(msim_bench_same_stats(&st, &r.memsim));
	ck_assert_int_eq(n, r.minimal.requests);
}
END_TEST

/* Two streams: the bench says it cannot compare. */
START_TEST(test_streams_refused)
{
	char path[] = "/tmp/memsim-minreplay-XXXXXX", why[1024];
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *fp = fdopen(fd, "w");
	fprintf(fp, "action,addr,size,stream\n"
		"alloc,4096,1048576,0\n"
		"alloc,8392704,1048576,5\n"
		"free_completed,4096,1048576,0\n");
	fclose(fp);
	msim_bench_same_t r;
	int rc = msim_bench_same(path, &r, why, sizeof(why));
	unlink(path);
	ck_assert_int_eq(rc, MSIM_ENOTSUP);
	ck_assert_msg(strstr(why, "request 2"), "%s", why);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("minreplay");
	TCase *tc = tcase_create("minreplay");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_exact);
	tcase_add_loop_test(tc, test_same_as_pytorch, 0,
			    sizeof(traces) / sizeof(*traces));
	tcase_add_test(tc, test_streams_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
